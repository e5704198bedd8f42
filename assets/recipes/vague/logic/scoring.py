"""VAGUE scoring rules (Tables 1–3, App. I): accuracy overall, per source, per release subset (VCR / Ego4D, Table 1) and per category,
the counts and rates of each counterfactual type chosen (FS / SU / NE, Table 2 / 3 "Incorrect
count"); a free-form setting (App. I) scores the answer against the correct option's text
with BERTScore, METEOR, BLEU and ROUGE-L."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from forge.evals.scoring import Scorer, as_float, skipped_reason

TYPES = ("FS", "SU", "NE")
FREE_FORM_METRICS = ("bertscore_f1", "meteor", "bleu", "rouge_l")


def score_setting(setting: str, g: pd.DataFrame, sc: Scorer, primary: str, options: dict[str, Any]) -> None:
    if g["detail"].map(lambda d: ((d or {}).get("context") or {}).get("answer_type") == "free_form").any():
        _score_free_form(setting, g, sc)
        return
    sc.mean(setting, "accuracy", g, "score", primary=True)
    for col in ("source", "category"):
        if col in g:
            for val, sub in g.groupby(col):
                sc.mean(setting, "accuracy", sub, "score", slice_=f"{col}={val}")
    # Table 1's columns: the release's image subset (VCR / Ego4D), one per item, kept in its labels
    for val, sub in sc.label_slices(g, "subset") if "labels_d" in g else ():
        sc.mean(setting, "accuracy", sub, "score", slice_=f"subset={val}")
    chosen = g["detail"].map(lambda d: (d or {}).get("chosen_type"))
    correct = np.nan_to_num(as_float(g["score"]))
    sc.add(setting, "correct_count", g, stat=lambda w, f=correct: float((f * w).sum()))
    for t in TYPES:
        flag = (chosen == t).astype(float).to_numpy()
        sc.add(setting, f"errors_{t}", g, stat=lambda w, f=flag: float((f * w).sum()))
        sc.add(setting, f"error_rate_{t}", g, values=flag)
        if "source" in g:
            for val, sub in g.assign(_f=flag).groupby("source"):
                f_sub = sub["_f"].to_numpy()
                sc.add(
                    setting, f"errors_{t}", sub, stat=lambda w, f=f_sub: float((f * w).sum()), slice_=f"source={val}"
                )


def _score_free_form(setting: str, g: pd.DataFrame, sc: Scorer) -> None:
    for metric in FREE_FORM_METRICS:
        vals = np.array(
            [(d or {}).get(metric, np.nan) if (d or {}).get(metric) is not None else np.nan for d in g["detail"]],
            dtype=float,
        )
        skipped = skipped_reason(g, metric)
        if skipped:
            sc.skipped(setting, metric, g, skipped)
            continue
        sc.add(setting, metric, g, values=vals, primary=metric == "bertscore_f1")
        if "source" in g:
            for val, sub in g.assign(_v=vals).groupby("source"):
                sc.add(setting, metric, sub, values=sub["_v"].to_numpy(dtype=float), slice_=f"source={val}")
