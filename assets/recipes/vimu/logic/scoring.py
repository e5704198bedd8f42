"""ViMU scoring rules as the official scripts apply them (docs/evals.md, "ViMU rules").

* multi-select (EG / RM / SV): the set score ``vimu_set_score`` (scripts/11-vimu_eg_score.py,
  21-vimu_ss_score.py) with its official summaries; micro-F1 (Fig. 6a), error composition
  (Fig. 6b), co-occurrence distortion (Fig. 8) and option affinity (Fig. 9);
* open-ended (OE): the judge's raw total −6..9 (App. B Eq. 1; scripts/01-vimu_oe_judge.py),
  normalised (total + 6) / 15 (scripts/02-vimu_oe_score.py); an inference error gets −1
  without a judge call, an empty reply is still judged;
* ``score_setting``: task means, SSU-Avg and All-Avg (the primary metric), in %.

The judge hooks (``judge_variables``, ``read_judgement``, ``judge_failed_call``) are wired
through the spec's ``EvalSpec``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from forge.evals.scorers import (
    cooccurrence,
    frobenius,
    micro_f1,
    partial_set_score,
    selection_conservatism,
    weighted_mean,
)
from forge.evals.scoring import Scorer, answered_share, as_float
from forge.items.cells import as_object

vimu_set_score = partial_set_score  # the official set score (App. I), one definition

LETTERS = ("A", "B", "C", "D", "E")
TASKS = ("OE", "EG", "RM", "SV")

# Official OE judge (scripts/01-vimu_oe_judge.py): the judge states ``score_total`` in -6..9;
# an inference error is given -1 without a judge call; 02-vimu_oe_score.py maps the mean raw
# total to (mean + 6) / 15 × 100.
VIMU_OE_MIN, VIMU_OE_MAX = -6.0, 9.0
VIMU_OE_INFERENCE_ERROR = -1.0


def vimu_oe_normalised(total: float) -> float:
    """(total − min) / (max − min): −6 → 0, 9 → 1 (×100 by the caller). Linear, so the mean of
    normalised item scores equals the official normalised mean total."""
    return (float(total) - VIMU_OE_MIN) / (VIMU_OE_MAX - VIMU_OE_MIN)


def vimu_oe_total(judgement: dict, source: str = "stated") -> float:
    """The raw OE total of one judgement. ``stated`` (paper default): the judge's own
    ``score_total``, which must be an integer in −6..9. ``breakdown`` (named option): Eq. 1
    recomputed from the validated components, ignoring the stated total. Raises ``ValueError``
    when the chosen source is missing or invalid (the row is then unscored)."""
    if source == "breakdown":
        return vimu_judge_total(judgement.get("score_breakdown") or judgement)
    v = judgement.get("score_total")
    if v is None or isinstance(v, bool):
        raise ValueError("judgement lacks score_total")
    f = float(v)
    if f != int(f) or not VIMU_OE_MIN <= f <= VIMU_OE_MAX:
        raise ValueError(f"score_total {v!r} outside the integers -6..9")
    return f


def vimu_oe_intersection(rows: Sequence[tuple[str, str, float | None]]) -> dict[str, list[float]]:
    """Official cross-model comparison (02-vimu_oe_score.py): rows are (model, video, raw
    total or None); rows without a total are dropped, then only videos with a total for *every*
    model seen are kept. Returns each model's totals on that common set."""
    by_video: dict[str, dict[str, float]] = {}
    models: set[str] = set()
    for model, video, total in rows:
        if total is None or (isinstance(total, float) and np.isnan(total)):
            continue
        by_video.setdefault(video, {})[model] = float(total)
        models.add(model)
    keep = sorted(v for v, m in by_video.items() if len(m) == len(models))
    return {m: [by_video[v][m] for v in keep] for m in sorted(models)}


# App. B: score_total = core + implicit + target - hallucination - literal_only.
VIMU_JUDGE_RANGES = {
    "core_intent": (0, 5),
    "implicit_signal": (0, 3),
    "target_or_social_meaning": (0, 1),
    "hallucination_penalty": (0, 3),
    "literal_only_penalty": (0, 3),
}
VIMU_JUDGE_MAX = 9.0


def vimu_judge_total(breakdown: dict) -> float:
    """Eq. (1) of App. B; raises ``ValueError`` on a missing or out-of-range component
    (a judge reply we cannot trust is a judge failure, never a clipped guess)."""
    vals = {}
    for key, (lo, hi) in VIMU_JUDGE_RANGES.items():
        if key not in breakdown or breakdown[key] is None:
            raise ValueError(f"judge breakdown lacks {key}")
        v = float(breakdown[key])
        if not lo <= v <= hi:
            raise ValueError(f"judge {key}={v} outside [{lo}, {hi}]")
        vals[key] = v
    return (
        vals["core_intent"]
        + vals["implicit_signal"]
        + vals["target_or_social_meaning"]
        - vals["hallucination_penalty"]
        - vals["literal_only_penalty"]
    )


def vimu_judge_normalised(judgement: dict, source: str = "stated") -> float:
    """The OE item score in [0, 1]: the raw total (``vimu_oe_total``) normalised as the
    official script does, (total + 6) / 15."""
    return vimu_oe_normalised(vimu_oe_total(judgement, source))


# -- the OE judge (EvalSpec hooks) -----------------------------------------------------------


def judge_variables(row: dict[str, Any], item: dict[str, Any]) -> dict[str, str]:
    """01-vimu_oe_judge.py's inputs: question, gold answer, literal summary, intended meaning,
    evidence (JSON) and rubric (JSON; our reference points play that role), and every reply that
    came back is judged, an empty one included (its raw text)."""
    extra = as_object(item.get("extra"))
    pts = extra.get("reference_points") or extra.get("rubric") or []
    return {
        "question": item["question"],
        "gold": item["answer"],
        "literal_summary": str(extra.get("literal_summary") or "(none)"),
        "intended_meaning": str(extra.get("intended_meaning") or "(none)"),
        "evidence": json.dumps(extra.get("evidence") or [], ensure_ascii=False),
        "reference_points": json.dumps(pts, ensure_ascii=False),
        "prediction": row["parsed"] if row["status"] == "ok" else (row.get("raw_reply") or ""),
    }


def read_judgement(row: dict[str, Any], data: dict[str, Any], options: dict[str, Any]) -> None:
    """The raw total is the judge's stated ``score_total`` (option ``vimu_oe_total: breakdown``
    recomputes Eq. 1 from the components); a judge reply without a valid total raises, so the
    row is left unscored (dropped from the mean, as officially)."""
    total = vimu_oe_total(data, options.get("vimu_oe_total", "stated"))
    row["detail"]["oe_total"] = total
    row.update(
        judge_ok=True,
        judge_score=total,
        score=vimu_oe_normalised(total),
        judge_verdict=data.get("verdict"),
        judge_justification=data.get("reasoning_short") or data.get("justification"),
    )


def judge_failed_call(row: dict[str, Any]) -> None:
    """01-vimu_oe_judge.py: an OE reply that is an inference error gets the raw total −1 without
    a judge call (normalised (−1 + 6) / 15 = 1/3), and stays in the mean."""
    row["detail"]["oe_total"] = VIMU_OE_INFERENCE_ERROR
    row.update(
        judge_score=VIMU_OE_INFERENCE_ERROR,
        score=vimu_oe_normalised(VIMU_OE_INFERENCE_ERROR),
        judge_verdict="wrong",
        judge_justification="Inference error.",
    )


# -- aggregate rows --------------------------------------------------------------------------


def task_values(sub: pd.DataFrame, task: str, options: dict[str, Any]) -> np.ndarray:
    """Item scores in [0, 1] as the official scripts average them: EG / RM / SV set scores with
    a failed call as an empty selection (0); OE (total + 6) / 15 with an inference error at −1
    (already in ``score``) and rows without a judged total left out."""
    v = as_float(sub["score"])
    if task != "OE":
        v[(sub["status"] == "call_failed").to_numpy()] = 0.0
    return v


def score_setting(setting: str, g: pd.DataFrame, sc: Scorer, primary: str, options: dict[str, Any]) -> None:
    tasks: dict[str, pd.DataFrame] = {}
    for task in TASKS:
        sub = g[g["category"] == task].reset_index(drop=True)
        if len(sub):
            sub = sub.assign(score=task_values(sub, task, options))
            tasks[task] = sub
            sc.mean(
                setting,
                task,
                sub,
                "score",
                scale=100.0,
                coverage=float(sub["score"].notna().mean()) if task == "OE" else answered_share(sub),
            )
    # SSU-Avg (RM, SV) and All-Avg (the four tasks): mean of task means, resampled jointly.
    for name, keys in (("SSU-Avg", ("RM", "SV")), ("All-Avg", ("OE", "EG", "RM", "SV"))):
        if not all(k in tasks for k in keys):
            continue
        sub = pd.concat([tasks[k] for k in keys], ignore_index=True)
        v, cat = as_float(sub["score"]), sub["category"].to_numpy()
        masks = [cat == k for k in keys]
        stat = lambda w, v=v, masks=masks: float(np.mean([weighted_mean(v[m], w[m]) for m in masks]))  # noqa: E731
        sc.add(
            setting, name, sub, stat=stat, primary=name == "All-Avg", scale=100.0, coverage=float((~np.isnan(v)).mean())
        )
    if "OE" in tasks:
        oe = tasks["OE"]
        total = np.array(
            [
                (d or {}).get("oe_total", np.nan) if (d or {}).get("oe_total") is not None else np.nan
                for d in oe["detail"]
            ],
            dtype=float,
        )
        ok = ~np.isnan(total)
        # 02-vimu_oe_score.py: raw mean and the shares of totals >= 3, == 9, <= 0.
        sc.add(setting, "OE_raw_total", oe, values=total)
        for name, flag in (
            ("OE_success_rate", total >= 3),
            ("OE_perfect_rate", total == 9),
            ("OE_wrong_rate", total <= 0),
        ):
            sc.add(setting, name, oe, values=np.where(ok, flag.astype(float), np.nan))
    for task in ("EG", "RM", "SV"):
        if task in tasks:
            _selection_summaries(setting, task, tasks[task], sc)


def _selection_summaries(setting: str, task: str, sub: pd.DataFrame, sc: Scorer) -> None:
    preds = [list((d or {}).get("pred_set") or []) for d in sub["detail"]]
    # a failed call has no parse detail: its gold set comes from the row (officially it is
    # an empty prediction scored against the question's gold)
    gold_col = sub["gold"] if "gold" in sub else pd.Series([None] * len(sub))
    golds = [
        list((d or {}).get("gold_set") or [x.strip() for x in str(gcol or "").split(",") if x.strip()])
        for d, gcol in zip(sub["detail"], gold_col)
    ]
    v = as_float(sub["score"])
    # Official summaries: exact set match, zero-score share, mean set sizes and their difference.
    sc.add(
        setting,
        "exact_set_match_rate",
        sub,
        values=np.array([float(set(p) == set(q)) for p, q in zip(preds, golds)]),
        slice_=f"task={task}",
    )
    sc.add(setting, "zero_score_rate", sub, values=(v == 0).astype(float), slice_=f"task={task}")
    sc.add(
        setting,
        "avg_pred_option_count",
        sub,
        values=np.array([len(set(p)) for p in preds], dtype=float),
        slice_=f"task={task}",
    )
    sc.add(
        setting,
        "avg_gold_option_count",
        sub,
        values=np.array([len(set(q)) for q in golds], dtype=float),
        slice_=f"task={task}",
    )
    sc.add(
        setting,
        "selection_conservatism",
        sub,
        stat=lambda w, p=preds, q=golds: selection_conservatism(p, q, w),
        slice_=f"task={task}",
        coverage=answered_share(sub),
    )
    for part in ("f1", "precision", "recall"):  # Fig. 6a (EG) Micro-F1; reported for RM / SV too
        sc.add(
            setting,
            f"micro_{part}",
            sub,
            stat=lambda w, p=preds, q=golds, k=part: micro_f1(p, q, w)[k],
            slice_=f"task={task}",
            coverage=answered_share(sub),
        )
    comp = sub["detail"].map(lambda d: (d or {}).get("composition"))
    for kind in ("exact", "miss_only", "extra_only", "mixed", "unparseable"):  # Fig. 6b
        sc.add(
            setting,
            f"composition_{kind}",
            sub,
            values=(comp == kind).astype(float).to_numpy(),
            slice_=f"task={task}",
        )
    ok = sub[sub["status"] == "ok"]
    if len(ok):
        preds_ok = [d.get("pred_set", []) for d in ok["detail"]]
        golds_ok = [d.get("gold_set", []) for d in ok["detail"]]
        for letter in LETTERS:  # Fig. 9: predicted minus gold prevalence of each option
            flag_p = np.array([letter in p for p in preds_ok], dtype=float)
            flag_g = np.array([letter in x for x in golds_ok], dtype=float)
            sc.add(
                setting,
                "option_affinity",
                ok,
                stat=lambda w, a=flag_p - flag_g: float((a * w).sum() / w.sum()),
                slice_=f"task={task},option={letter}",
            )
        # Fig. 8d: distortion of the option co-occurrence geometry
        dist = frobenius(cooccurrence(preds_ok, LETTERS), cooccurrence(golds_ok, LETTERS))
        sc.rows.append(
            {
                "setting": setting,
                "metric": "cooccurrence_distance",
                "slice": f"task={task}",
                "value": dist,
                "ci_low": None,
                "ci_high": None,
                "n": len(ok),
                "coverage": len(ok) / len(sub),
                "primary": False,
            }
        )
