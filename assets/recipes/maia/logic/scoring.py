"""MAIA scoring rules (§6, Table 4, Table 12): statement-verification accuracy, pool
consistency (every TS–FS pair of a question's pool right), open-ended accuracy from the judge,
the reference-overlap metrics against the pool of 8 references, and Agg-Acc (the primary
metric: the whole pool right AND the open answer judged correct).

Paper default: a pair or answer whose call failed, or whose reply could not be read or judged,
is not correct. Option ``maia_unscored_as_missing`` leaves such units unscored instead (out of
the mean, lowering coverage).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from forge.evals.scorers import all_correct
from forge.evals.scoring import Scorer, answered_share, as_flags, as_float, skipped_reason

from .taxonomy import CAUSAL

TEXT_METRICS = ("rouge_l", "bertscore_f1", "bleu", "meteor", "cider")


def maia_pool_flags(sv: pd.DataFrame, options: dict[str, Any]) -> pd.DataFrame:
    """One row per MAIA question: ``pool_ok`` = every TS–FS pair of its pool answered right.
    Paper default: a pair whose call failed or whose reply could not be read is not right (the
    pool fails). Option ``maia_unscored_as_missing``: such pairs make the pool unknown instead
    (left out of the mean, lowering coverage)."""
    lenient = bool(options.get("maia_unscored_as_missing"))

    def flag(row: pd.Series) -> bool | None:
        c = row["correct"]
        if row["status"] != "call_failed" and c is not None and not (isinstance(c, float) and np.isnan(c)):
            return bool(c)
        return None if lenient else False

    types = sv["labels_d"].map(lambda d: (d or {}).get("causal_type")) if "labels_d" in sv else None
    sv = sv.assign(_ok=sv.apply(flag, axis=1), _answered=sv["status"] != "call_failed", _causal_type=types)
    return (
        sv.groupby("question_id")
        .agg(
            pool_ok=("_ok", lambda s: all_correct(s.tolist())),
            pool_correct=("_ok", lambda s: int(sum(x is True for x in s))),
            pairs=("item_id", "size"),
            answered=("_answered", "mean"),
            source_item_id=("source_item_id", "first"),
            category=("category", "first"),
            causal_type=("_causal_type", "first"),
        )
        .reset_index()
    )


def causal_groups(df: pd.DataFrame, labels: pd.Series | None = None) -> list[tuple[str, pd.DataFrame]]:
    """(type, rows) of the causal rows by ``causal_type`` (explicit / implicit): Tables 10 and 13
    split the causal column; the main tables keep it whole (App. A.2 fn. 10)."""
    if not len(df) or "category" not in df:
        return []
    types = (labels if labels is not None else df["labels_d"]).map(lambda d: (d or {}).get("causal_type"))
    causal = df[(df["category"] == CAUSAL).to_numpy() & types.notna().to_numpy()]
    if not len(causal):
        return []
    return [(str(t), sub) for t, sub in causal.groupby(types[causal.index].to_numpy())]


def maia_agg_flags(oe: pd.DataFrame, pools: pd.DataFrame, options: dict[str, Any]) -> pd.DataFrame:
    """Agg-Acc per question (§6): 1 iff the whole pool is right AND the OE answer is judged
    correct. Default: a failed call or judge failure counts as not correct; with
    ``maia_unscored_as_missing`` it leaves the question unscored."""
    lenient = bool(options.get("maia_unscored_as_missing"))
    m = oe.merge(pools[["question_id", "pool_ok"]], on="question_id", how="inner")
    out = []
    for p, s in zip(m["pool_ok"], m["score"]):
        missing = p is None or s is None or (isinstance(s, float) and np.isnan(s))
        if missing and lenient:
            out.append(np.nan)
        else:
            out.append(float(bool(p) and s is not None and not (isinstance(s, float) and np.isnan(s)) and s >= 1.0))
    return m.assign(agg=out)


def score_setting(setting: str, g: pd.DataFrame, sc: Scorer, primary: str, options: dict[str, Any]) -> None:
    sv = g[g["task"] == "statement_verification"].reset_index(drop=True)
    oe = g[g["task"] == "open_ended"].reset_index(drop=True)
    lenient = bool(options.get("maia_unscored_as_missing"))
    qid = lambda d: d.get("question_id")  # noqa: E731
    pools = pd.DataFrame()
    if len(sv):
        sv_vals = as_float(sv["score"])
        if not lenient:  # a failed call is not a right answer (coverage still shows it)
            sv_vals[(sv["status"] == "call_failed").to_numpy()] = 0.0
        sv = sv.assign(score=sv_vals)
        sc.mean(setting, "sv_accuracy", sv, "score", coverage=answered_share(sv))
        for cat, sub in sv.groupby("category"):
            sc.mean(setting, "sv_accuracy", sub, "score", slice_=f"category={cat}", coverage=answered_share(sub))
        for typ, sub in causal_groups(sv):  # Table 10
            sc.mean(setting, "sv_accuracy", sub, "score", slice_=f"causal_type={typ}", coverage=answered_share(sub))
        sv = sv.assign(question_id=sv["labels_d"].map(qid))
        pools = maia_pool_flags(sv, options)
        cov = float(pools["answered"].mean())
        sc.add(setting, "pool_consistency", pools, values=as_flags(pools["pool_ok"]), coverage=cov)
        for cat, sub in pools.groupby("category"):
            sc.add(
                setting,
                "pool_consistency",
                sub,
                values=as_flags(sub["pool_ok"]),
                slice_=f"category={cat}",
                coverage=float(sub["answered"].mean()),
            )
        for typ, sub in causal_groups(pools, pools["causal_type"].map(lambda t: {"causal_type": t})):
            sc.add(
                setting,
                "pool_consistency",
                sub,
                values=as_flags(sub["pool_ok"]),
                slice_=f"causal_type={typ}",
                coverage=float(sub["answered"].mean()),
            )
        # Table 12: total (8/8) and majority (4–7 of 8) agreement with the true statements.
        frac = (pools["pool_correct"] / pools["pairs"]).to_numpy(dtype=float)
        sc.add(setting, "pool_majority", pools, values=((frac >= 0.5) & (frac < 1.0)).astype(float), coverage=cov)
    if len(oe):
        oe_vals = as_float(oe["score"])
        if not lenient:
            oe_vals[np.isnan(oe_vals)] = 0.0  # failed call / judge failure: not correct
        oe = oe.assign(score=oe_vals if not lenient else oe["score"])
        # coverage: answers with a verdict (judged, or empty and so not correct without a judge)
        cov = float(((oe["status"] == "unparseable") | (oe["judge_ok"] == True)).mean())  # noqa: E712
        sc.mean(setting, "oe_accuracy", oe, "score", coverage=cov)
        for cat, sub in oe.groupby("category"):
            sc.mean(setting, "oe_accuracy", sub, "score", slice_=f"category={cat}")
        for typ, sub in causal_groups(oe):  # Table 13
            sc.mean(setting, "oe_accuracy", sub, "score", slice_=f"causal_type={typ}")
        for metric in TEXT_METRICS:  # Table 4
            skipped = skipped_reason(oe, metric)
            if skipped:
                sc.skipped(setting, metric, oe, skipped)
                continue
            vals = np.array([np.nan if (d or {}).get(metric) is None else d[metric] for d in oe["detail"]], dtype=float)
            sc.add(setting, metric, oe, values=vals)
        sc.add(
            setting,
            "embedding_similarity",
            oe,
            values=np.array([(d or {}).get("similarity", np.nan) for d in oe["detail"]], dtype=float),
        )
    if len(oe) and len(pools):
        oe = oe.assign(question_id=oe["labels_d"].map(qid))
        m = maia_agg_flags(oe, pools, options)
        sc.add(
            setting,
            "agg_accuracy",
            m,
            values=m["agg"].to_numpy(dtype=float),
            primary=True,
            coverage=float(((m["status"] != "call_failed") & m["pool_ok"].notna()).mean()) if len(m) else None,
        )
        for cat, sub in m.groupby("category"):
            sc.add(setting, "agg_accuracy", sub, values=sub["agg"].to_numpy(dtype=float), slice_=f"category={cat}")
        for typ, sub in causal_groups(m):
            sc.add(setting, "agg_accuracy", sub, values=sub["agg"].to_numpy(dtype=float), slice_=f"causal_type={typ}")
