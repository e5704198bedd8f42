"""Hummus scoring (§6.1, Table 2): per-reply scores of the structured tasks and the per-setting
aggregates. Naming and ImageLabel are scored by embedding similarity (the shared
``similarity_scores`` embeds what ``score_structured`` returns), ImageBbox by IoU against the
best gold box, CaptionHL by span overlap, Explanation by ROUGE-1/2; Classification by per-class F1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from forge.evals import extract as ex
from forge.evals.scorers import box_iou, f1_per_class, rouge_n, span_overlap
from forge.evals.scoring import Scorer, as_flags
from forge.items.cells import as_object


def score_structured(
    r: dict[str, Any], item: dict[str, Any], refs: list[str], thresholds: dict[str, float]
) -> list[str] | None:
    """Score one parsed reply of a structured task in place; the references to embed it against
    for the similarity-scored tasks (Naming, ImageLabel), else None."""
    task = r["task"]
    if task in ("naming", "image_label"):
        return refs
    if task == "image_box":
        pred = r["detail"]["parsed"]["box"]
        golds = [b["box_norm_tlhw"] for b in as_object(item.get("labels")).get("boxes", [])]
        best = max((box_iou(pred, g) for g in golds), key=lambda d: d["iou"], default=None)
        if best is None:
            r.update(status="no_gold", score=None)
            return None
        r["detail"].update(best)
        r.update(score=best["iou"], correct=best["iou"] > thresholds.get("iou", 0.5))
    elif task == "caption_highlight":
        gold = ex.extract_highlight(item["answer"]).values.get("spans", [])
        o = span_overlap(r["detail"]["parsed"]["spans"], gold)
        r["detail"].update(o)
        r.update(score=o["jaccard"])
    elif task == "explanation":
        r1, r2 = rouge_n(r["parsed"], item["answer"], 1), rouge_n(r["parsed"], item["answer"], 2)
        r["detail"].update(rouge1=r1, rouge2=r2)
        r.update(score=r1, correct=r1 >= thresholds.get("rouge1", 0.35) and r2 >= thresholds.get("rouge2", 0.087))
    return None


RANDOM_ITERATIONS = 100  # §6.1: "randomly choosing between Yes and No ..., averaging the results of 100 iterations"


def random_f1(gold_pos: np.ndarray, draws: np.ndarray, weights: np.ndarray) -> dict[str, float]:
    """Per-class F1 of ``draws`` (iterations x items, True = Yes) against ``gold_pos``, each class
    averaged over the iterations, with item ``weights`` (the bootstrap's)."""
    out = {}
    for name, pred, g in (("pos", draws, gold_pos), ("neg", ~draws, ~gold_pos)):
        tp = (pred & g) @ weights
        fp = (pred & ~g) @ weights
        fn = (~pred & g) @ weights
        denom = 2 * tp + fp + fn
        out[name] = float(np.mean(np.where(tp > 0, 2 * tp / np.where(denom > 0, denom, 1), 0.0)))
    out["avg"] = (out["pos"] + out["neg"]) / 2
    return out


def random_baseline(setting: str, cls: pd.DataFrame, gold: list[str], sc: Scorer, seed: int = 0) -> None:
    """The §6.1 random Classification baseline on the same items: rows ``f1_pos`` / ``f1_neg`` /
    ``f1_avg`` in the slice ``baseline=random`` (a seeded draw of 100 iterations)."""
    gold_pos = np.array([g == "pos" for g in gold], dtype=bool)
    draws = np.random.default_rng(seed).random((RANDOM_ITERATIONS, len(gold_pos))) < 0.5
    for name, key in (("f1_pos", "pos"), ("f1_neg", "neg"), ("f1_avg", "avg")):
        sc.add(setting, name, cls, stat=lambda w, k=key: random_f1(gold_pos, draws, w)[k], slice_="baseline=random")


# Hand-labelled match / no-match pairs the Naming / ImageLabel thresholds (evals.yaml) are calibrated
# on for the embedder in use (forge/evals/calibration.py, perf/calibrate_hummus_thresholds.py).
CALIBRATION_PAIRS = Path(__file__).with_name("similarity_calibration.yaml")


# Hummus §6.1 thresholds, calibrated for all-MiniLM-L6-v2 (docs/evals.md "Hummus thresholds").
def score_setting(setting: str, g: pd.DataFrame, sc: Scorer, primary: str, options: dict[str, Any]) -> None:
    cls = g[g["task"] == "classification"].reset_index(drop=True)
    if len(cls):
        pred = [None if s != "ok" else ("pos" if p == "A" else "neg") for s, p in zip(cls["status"], cls["parsed"])]
        gold = ["pos" if a == "A" else "neg" for a in cls["gold"]]
        for name, key in (("f1_pos", "pos"), ("f1_neg", "neg"), ("f1_avg", "avg")):
            sc.add(
                setting,
                name,
                cls,
                stat=lambda w, k=key: f1_per_class(pred, gold, ["pos", "neg"], w)[k],
                primary=name == "f1_avg",
                coverage=float((cls["status"] != "call_failed").mean()),
            )
        random_baseline(setting, cls, gold, sc)
    for task, metrics in (
        ("naming", [("naming_similarity", "similarity"), ("naming_match_rate", "@correct")]),
        ("image_label", [("label_similarity", "similarity"), ("label_match_rate", "@correct")]),
        (
            "image_box",
            [
                ("box_iou", "iou"),
                ("box_precision", "precision"),
                ("box_recall", "recall"),
                ("box_match_rate", "@correct"),
            ],
        ),
        (
            "caption_highlight",
            [("caption_jaccard", "jaccard"), ("caption_precision", "precision"), ("caption_recall", "recall")],
        ),
        (
            "explanation",
            [
                ("explanation_rouge1", "rouge1"),
                ("explanation_rouge2", "rouge2"),
                ("explanation_acceptable_rate", "@correct"),
            ],
        ),
    ):
        sub = g[g["task"] == task].reset_index(drop=True)
        if not len(sub):
            continue
        sc.success(setting, sub, slice_=f"task={task}")
        # Hummus reports means over the answers that could be evaluated, with the success rate.
        ok = sub[sub["status"] == "ok"].reset_index(drop=True)
        for metric, key in metrics:
            if key == "@correct":
                vals = as_flags(ok["correct"])
            else:
                vals = np.array([(d or {}).get(key, np.nan) for d in ok["detail"]], dtype=float)
            sc.add(setting, metric, ok if len(ok) else sub.iloc[:0], values=vals)
