"""Judges, embedding/overlap scores and the aggregate ``eval_scores`` rows per benchmark.

Every aggregate row: (setting, metric, slice, value, ci_low, ci_high, n, coverage, primary).
``n`` = items in the slice, ``coverage`` = share of them with a score (an item whose judge
failed, or whose call failed, has none: it is left out of the mean, never filled in).
Unparseable replies are the model's failure and score 0 (success rate reported separately).
CIs: cluster bootstrap by ``source_item_id`` (forge/evals/bootstrap.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from forge.evals import extract as ex
from forge.evals import textmetrics
from forge.evals.bootstrap import cluster_bootstrap
from forge.evals.requests import as_list, jload
from forge.evals.scorers import (
    VIMU_OE_INFERENCE_ERROR,
    all_correct,
    box_iou,
    cooccurrence,
    f1_per_class,
    frobenius,
    micro_f1,
    rouge_n,
    selection_conservatism,
    span_overlap,
    vimu_oe_normalised,
    vimu_oe_total,
    weighted_mean,
)
from forge.llm.types import LLMRequest, LLMResult

VIMU_LETTERS = ("A", "B", "C", "D", "E")


# -- judges ----------------------------------------------------------------------------------


def judge_requests(
    benchmark: str, rows: list[dict[str, Any]], items: dict[str, dict[str, Any]], prompt: Any
) -> list[tuple[int, LLMRequest]]:
    """(row index, judge request) for every open-ended prediction that has an answer."""
    out = []
    for i, r in enumerate(rows):
        if r["task"] != "open_ended":
            continue
        # ViMU (01-vimu_oe_judge.py) sends every reply that came back to the judge, an empty one
        # included; MAIA judges parsed answers only (an empty answer is simply not correct).
        if r["status"] != "ok" and not (benchmark == "vimu" and r["status"] == "unparseable"):
            continue
        item = items[r["item_id"]]
        rid = f"{r['setting']}:{r['item_id']}"
        if benchmark == "vimu":
            pts = jload(item.get("extra")).get("reference_points") or []  # the official "rubric" role
            pred = r["parsed"] if r["status"] == "ok" else (r.get("raw_reply") or "")
            ex_ = jload(item.get("extra"))
            v = {
                "question": item["question"],
                "gold": item["answer"],
                "intended_meaning": str(ex_.get("intended_meaning") or "(none)"),
                "reference_points": "; ".join(map(str, pts)) or "(none)",
                "prediction": pred,
            }
        else:
            refs = as_list(item.get("references"))
            v = {
                "question": item["question"],
                "answer": r["parsed"],
                "references": "\n".join(f"R{k}: {t}" for k, t in enumerate(refs, start=1)),
            }
        out.append((i, LLMRequest(item_id=rid, prompt=prompt, variables=v, params={"temperature": 0})))
    return out


def vimu_inference_errors(rows: list[dict[str, Any]]) -> None:
    """01-vimu_oe_judge.py: an OE reply that is an inference error gets the raw total −1 without
    a judge call (normalised (−1 + 6) / 15 = 1/3), and stays in the mean."""
    for r in rows:
        if r["task"] == "open_ended" and r["status"] == "call_failed":
            r["detail"]["oe_total"] = VIMU_OE_INFERENCE_ERROR
            r.update(
                judge_score=VIMU_OE_INFERENCE_ERROR,
                score=vimu_oe_normalised(VIMU_OE_INFERENCE_ERROR),
                judge_verdict="wrong",
                judge_justification="Inference error.",
            )


def apply_judge(
    benchmark: str,
    rows: list[dict[str, Any]],
    pairs: list[tuple[int, LLMRequest]],
    results: list[LLMResult],
    options: dict[str, Any] | None = None,
) -> None:
    """Judge verdicts into rows. ViMU: the raw total is the judge's stated ``score_total``
    (option ``vimu_oe_total: breakdown`` recomputes Eq. 1 from the components); a judge reply
    without a valid total leaves the row unscored (dropped from the mean, as officially)."""
    source = (options or {}).get("vimu_oe_total", "stated")
    for (i, _), res in zip(pairs, results, strict=True):
        r = rows[i]
        r.update(judge_model=res.model, judge_prompt_hash=res.prompt_hash)
        if not res.ok:
            r.update(judge_ok=False, judge_error=f"{res.error_class}: {res.error}", score=None, correct=None)
            continue
        data = res.data or {}
        r["judge_json"] = json.dumps(data, ensure_ascii=False)
        try:
            if benchmark == "vimu":
                total = vimu_oe_total(data, source)
                r["detail"]["oe_total"] = total
                r.update(
                    judge_ok=True,
                    judge_score=total,
                    score=vimu_oe_normalised(total),
                    judge_verdict=data.get("verdict"),
                    judge_justification=data.get("reasoning_short") or data.get("justification"),
                )
            else:
                label = str(data.get("label", "")).strip().lower()
                if label not in ("correct", "incorrect"):
                    raise ValueError(f"judge label {data.get('label')!r}")
                ok = label == "correct"
                r.update(
                    judge_ok=True, judge_score=float(ok), score=float(ok), correct=ok, judge_verdict=data.get("label")
                )
        except (ValueError, TypeError) as exc:
            r.update(judge_ok=False, judge_error=f"{type(exc).__name__}: {exc}", score=None, correct=None)


JUDGE_MISSING = "judge_missing"


def judge_unavailable(rows: list[dict[str, Any]], pairs: list[tuple[int, LLMRequest]], why: str) -> None:
    """No real judge for these answers (the judge is the offline stub, or the answers are a stub
    model's placeholders): judge failures with the reason, never scores."""
    for i, _ in pairs:
        rows[i].update(
            judge_ok=False, judge_error=f"{JUDGE_MISSING}: {why}", judge_model=None, score=None, correct=None
        )


def unparseable_open_ended(rows: list[dict[str, Any]]) -> None:
    """An empty/echo reply to an open-ended question is the model's failure: 0, no judge
    (not ViMU, whose judge rates every reply: see ``judge_requests``)."""
    for r in rows:
        if r["task"] == "open_ended" and r["status"] == "unparseable" and r["benchmark"] != "vimu":
            r.update(score=0.0, correct=False)
    vimu_inference_errors([r for r in rows if r["benchmark"] == "vimu"])


# -- embedding / overlap item scores ---------------------------------------------------------


def _is_free_form(r: dict[str, Any]) -> bool:
    return ((r.get("detail") or {}).get("context") or {}).get("answer_type") == "free_form"


def _text_refs(r: dict[str, Any], item: dict[str, Any]) -> list[str]:
    if r["benchmark"] == "vague":  # App. I: the free-form answer against the correct option's text
        opts = as_list(item.get("options"))
        k = ord(str(item["answer"]).strip()[:1] or "A") - 65
        return [str(opts[k])] if 0 <= k < len(opts) else []
    return [str(x) for x in as_list(item.get("references"))]


def maia_text_metrics(
    rows: list[dict[str, Any]], items: dict[str, dict[str, Any]], metrics_cfg: dict[str, Any] | None = None
) -> None:
    """MAIA Table 4: BLEU, ROUGE-L, METEOR, CIDEr, BERTScore of each OE answer against its pool
    of 8 references; VAGUE free-form answers against the correct option
    (``forge.evals.textmetrics``). An empty answer scores as the empty string; a failed call has
    no value. Metrics that cannot run here are recorded with the reason."""
    idx = [
        i
        for i, r in enumerate(rows)
        if r["status"] in ("ok", "unparseable")
        and (
            (r["benchmark"] == "maia" and r["task"] == "open_ended") or (r["benchmark"] == "vague" and _is_free_form(r))
        )
    ]
    if not idx:
        return
    preds = [rows[i]["parsed"] if rows[i]["status"] == "ok" else "" for i in idx]
    refs = [_text_refs(rows[i], items[rows[i]["item_id"]]) for i in idx]
    values, skipped = textmetrics.similarity_table(preds, refs, (metrics_cfg or {}).get("bertscore"))
    for k, i in enumerate(idx):
        d = rows[i]["detail"]
        for name, arr in values.items():
            d[name] = None if np.isnan(arr[k]) else float(arr[k])
        if skipped:
            d["metrics_skipped"] = skipped


def similarity_scores(
    rows: list[dict[str, Any]],
    items: dict[str, dict[str, Any]],
    embedder: Any,
    thresholds: dict[str, float],
    metrics_cfg: dict[str, Any] | None = None,
) -> None:
    """Hummus naming / image_label / box / caption / explanation and MAIA OE similarity."""
    maia_text_metrics(rows, items, metrics_cfg)
    pairs: list[tuple[int, list[str]]] = []
    for i, r in enumerate(rows):
        if r["benchmark"] == "vague":
            continue
        if r["status"] != "ok":
            if r["status"] == "unparseable" and r["benchmark"] == "hummus":
                r.update(score=0.0, correct=False)
            continue
        item = items[r["item_id"]]
        refs = [str(x) for x in as_list(item.get("references")) or [item["answer"]]]
        task = r["task"]
        if r["benchmark"] == "maia" and task == "open_ended":
            pairs.append((i, refs))
        elif task in ("naming", "image_label"):
            pairs.append((i, refs))
        elif task == "image_box":
            pred = r["detail"]["parsed"]["box"]
            golds = [b["box_norm_tlhw"] for b in jload(item.get("labels")).get("boxes", [])]
            best = max((box_iou(pred, g) for g in golds), key=lambda d: d["iou"], default=None)
            if best is None:
                r.update(status="no_gold", score=None)
                continue
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
    if pairs and embedder is not None:
        preds = [rows[i]["parsed"] for i, _ in pairs]
        flat = sorted({t for _, refs in pairs for t in refs})
        pos = {t: k for k, t in enumerate(flat)}
        sim = embedder.similarity(preds, flat)
        for n, (i, refs) in enumerate(pairs):
            s = float(max(sim[n, pos[t]] for t in refs))
            r = rows[i]
            r["detail"]["similarity"] = s
            if r["benchmark"] == "hummus":
                r.update(score=s, correct=s >= thresholds.get(r["task"], 0.6))


# -- aggregation -----------------------------------------------------------------------------


class Scorer:
    def __init__(self, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05):
        self.n_boot, self.seed, self.alpha = n_boot, seed, alpha
        self.rows: list[dict[str, Any]] = []

    def add(
        self,
        setting: str,
        metric: str,
        df: pd.DataFrame,
        values: np.ndarray | None = None,
        stat: Callable[[np.ndarray], float] | None = None,
        slice_: str = "all",
        primary: bool = False,
        scale: float = 1.0,
        coverage: float | None = None,
    ) -> None:
        """One row: ``values`` (NaN = unscored) averaged, or any ``stat(weights)``."""
        if df.empty:
            return
        if stat is None:
            v = np.asarray(values, dtype=float)
            stat = lambda w, v=v: weighted_mean(v, w)  # noqa: E731
            cov = float((~np.isnan(v)).mean()) if coverage is None else coverage
        else:
            cov = 1.0 if coverage is None else coverage
        point = stat(np.ones(len(df)))
        lo, hi = cluster_bootstrap(stat, df["source_item_id"].tolist(), self.n_boot, self.seed, self.alpha)
        f = lambda x: None if x is None or np.isnan(x) else float(x) * scale  # noqa: E731
        self.rows.append(
            {
                "setting": setting,
                "metric": metric,
                "slice": slice_,
                "value": f(point),
                "ci_low": f(lo),
                "ci_high": f(hi),
                "n": int(len(df)),
                "coverage": cov,
                "primary": primary,
            }
        )

    def mean(self, setting: str, metric: str, df: pd.DataFrame, col: str, **kw: Any) -> None:
        self.add(setting, metric, df, values=pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float), **kw)

    def skipped(self, setting: str, metric: str, df: pd.DataFrame, reason: str) -> None:
        """A metric that could not be computed here: a row without a value whose slice says why."""
        self.rows.append(
            {
                "setting": setting,
                "metric": metric,
                "slice": f"skipped: {reason}",
                "value": None,
                "ci_low": None,
                "ci_high": None,
                "n": int(len(df)),
                "coverage": 0.0,
                "primary": False,
            }
        )

    def success(self, setting: str, df: pd.DataFrame, slice_: str = "all") -> None:
        called = df[df["status"] != "call_failed"]
        self.add(
            setting,
            "success_rate",
            df,
            values=np.where(df["status"] == "call_failed", np.nan, (df["status"] != "unparseable").astype(float)),
            slice_=slice_,
        )
        del called


def collapse_variants(preds: pd.DataFrame) -> pd.DataFrame:
    """Circular evaluation: one row per item, right only if right under every rotation."""
    base = preds[preds["variant"] == 0].copy()
    if (preds["variant"] > 0).any():
        agg = preds.groupby(["setting", "item_id"])["correct"].apply(lambda s: all_correct(s.tolist()))
        base["circular_correct"] = [agg.get((s, i)) for s, i in zip(base["setting"], base["item_id"])]
    return base


def _num(s: pd.Series) -> np.ndarray:
    return np.array(pd.to_numeric(s, errors="coerce"), dtype=float)  # a writable copy


def _bool(s: pd.Series) -> np.ndarray:
    return np.array([np.nan if v is None or (isinstance(v, float) and np.isnan(v)) else float(bool(v)) for v in s])


def score_benchmark(
    benchmark: Any, preds: pd.DataFrame, items: pd.DataFrame, sc: Scorer, options: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Aggregate rows of one model. ``benchmark``: a registered name or a spec, whose
    ``eval.score_setting`` and ``eval.primary_metric`` score each setting; ``options``: its
    named scoring options (config/evals.yaml ``benchmarks.<name>.scoring``; all off = the
    paper's own rules)."""
    from forge.benchmarks.registry import resolve

    bench = resolve(benchmark)
    if preds.empty:
        return []
    items_by = items.set_index("item_id")
    full = preds.copy()
    df = collapse_variants(full)
    df["labels_d"] = [jload(items_by.at[i, "labels"]) if i in items_by.index else {} for i in df["item_id"]]
    if "source" in items_by.columns:
        df["source"] = [items_by.at[i, "source"] if i in items_by.index else None for i in df["item_id"]]
    for setting, g in df.groupby("setting", sort=False):
        g = g.reset_index(drop=True)
        sc.success(setting, g)
        if "circular_correct" in g and g["circular_correct"].notna().any():
            sc.add(setting, "circular_accuracy", g, values=_bool(g["circular_correct"]))
        bench.eval.score_setting(setting, g, sc, bench.eval.primary_metric, dict(options or {}))
    return sc.rows


def _slices(sc: Scorer, setting: str, g: pd.DataFrame, metric: str, col: str, keys: list[str]) -> None:
    for key in keys:
        vals = g["labels_d"].map(lambda d, k=key: d.get(k))
        exploded = pd.DataFrame({"i": range(len(g)), "v": vals}).explode("v")
        for val, sub in exploded.dropna().groupby("v"):
            sc.add(
                setting,
                metric,
                g.iloc[sub["i"].tolist()],
                values=_num(g.iloc[sub["i"].tolist()][col]),
                slice_=f"{key}={val}",
            )


def _answered(g: pd.DataFrame) -> float:
    """Coverage: share of items whose call returned a reply (API errors excluded)."""
    return float((g["status"] != "call_failed").mean()) if len(g) else float("nan")


def iibench_accuracy_values(g: pd.DataFrame, options: dict[str, Any]) -> np.ndarray:
    """eval.py: every question is in the denominator, an API error (a dict response) and an
    empty reply included, both not correct. Option ``iibench_exclude_api_errors`` leaves API
    errors out of the denominator instead."""
    v = _num(g["score"])
    failed = (g["status"] == "call_failed").to_numpy()
    v[failed] = np.nan if options.get("iibench_exclude_api_errors") else 0.0
    return v


def _score_iibench(setting: str, g: pd.DataFrame, sc: Scorer, primary: str, options: dict[str, Any]) -> None:
    g = g.assign(score=iibench_accuracy_values(g, options))
    cov = _answered(g)
    sc.mean(setting, "accuracy", g, "score", primary=True, coverage=cov)
    # eval.py's other two columns: "Errors" (API errors) and "Miss" (no label), over all questions.
    sc.add(setting, "error_rate", g, values=(g["status"] == "call_failed").to_numpy(dtype=float))
    sc.add(
        setting,
        "miss_rate",
        g,
        values=((g["status"] == "unparseable") & (g["parse_method"] == "miss")).to_numpy(dtype=float),
    )
    for key in ("domain", "emotion", "image_type", "difficulty", "rhetoric"):
        vals = g["labels_d"].map(lambda d, k=key: d.get(k))
        exploded = pd.DataFrame({"i": range(len(g)), "v": vals}).explode("v")
        for val, sub in exploded.dropna().groupby("v"):
            part = g.iloc[sub["i"].tolist()]
            sc.mean(setting, "accuracy", part, "score", slice_=f"{key}={val}", coverage=_answered(part))


VAGUE_TYPES = ("FS", "SU", "NE")


def _score_vague(setting: str, g: pd.DataFrame, sc: Scorer, primary: str, options: dict[str, Any]) -> None:
    """Tables 1-3: accuracy (overall, per source and per category), the counts of correct and
    of each counterfactual type chosen (Table 2 / 3 "Incorrect count"), and their rates.
    Free-form settings (App. I) score the answer against the correct option's text."""
    if g["detail"].map(lambda d: ((d or {}).get("context") or {}).get("answer_type") == "free_form").any():
        _score_vague_free_form(setting, g, sc)
        return
    sc.mean(setting, "accuracy", g, "score", primary=True)
    for col in ("source", "category"):
        if col in g:
            for val, sub in g.groupby(col):
                sc.mean(setting, "accuracy", sub, "score", slice_=f"{col}={val}")
    chosen = g["detail"].map(lambda d: (d or {}).get("chosen_type"))
    correct = np.nan_to_num(_num(g["score"]))
    sc.add(setting, "correct_count", g, stat=lambda w, f=correct: float((f * w).sum()))
    for t in VAGUE_TYPES:
        flag = (chosen == t).astype(float).to_numpy()
        sc.add(setting, f"errors_{t}", g, stat=lambda w, f=flag: float((f * w).sum()))
        sc.add(setting, f"error_rate_{t}", g, values=flag)
        if "source" in g:
            for val, sub in g.assign(_f=flag).groupby("source"):
                f_sub = sub["_f"].to_numpy()
                sc.add(
                    setting, f"errors_{t}", sub, stat=lambda w, f=f_sub: float((f * w).sum()), slice_=f"source={val}"
                )


def _score_vague_free_form(setting: str, g: pd.DataFrame, sc: Scorer) -> None:
    for metric in ("bertscore_f1", "meteor", "bleu", "rouge_l"):
        vals = np.array(
            [(d or {}).get(metric, np.nan) if (d or {}).get(metric) is not None else np.nan for d in g["detail"]],
            dtype=float,
        )
        skipped = next(
            (d["metrics_skipped"][metric] for d in g["detail"] if (d or {}).get("metrics_skipped", {}).get(metric)),
            None,
        )
        if skipped:
            sc.skipped(setting, metric, g, skipped)
            continue
        sc.add(setting, metric, g, values=vals, primary=metric == "bertscore_f1")
        if "source" in g:
            for val, sub in g.assign(_v=vals).groupby("source"):
                sc.add(setting, metric, sub, values=sub["_v"].to_numpy(dtype=float), slice_=f"source={val}")


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

    sv = sv.assign(_ok=sv.apply(flag, axis=1), _answered=sv["status"] != "call_failed")
    return (
        sv.groupby("question_id")
        .agg(
            pool_ok=("_ok", lambda s: all_correct(s.tolist())),
            pool_correct=("_ok", lambda s: int(sum(x is True for x in s))),
            pairs=("item_id", "size"),
            answered=("_answered", "mean"),
            source_item_id=("source_item_id", "first"),
            category=("category", "first"),
        )
        .reset_index()
    )


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


MAIA_TEXT_METRICS = ("rouge_l", "bertscore_f1", "bleu", "meteor", "cider")


def _score_maia(setting: str, g: pd.DataFrame, sc: Scorer, primary: str, options: dict[str, Any]) -> None:
    sv = g[g["task"] == "statement_verification"].reset_index(drop=True)
    oe = g[g["task"] == "open_ended"].reset_index(drop=True)
    lenient = bool(options.get("maia_unscored_as_missing"))
    qid = lambda d: d.get("question_id")  # noqa: E731
    pools = pd.DataFrame()
    if len(sv):
        sv_vals = _num(sv["score"])
        if not lenient:  # a failed call is not a right answer (coverage still shows it)
            sv_vals[(sv["status"] == "call_failed").to_numpy()] = 0.0
        sv = sv.assign(score=sv_vals)
        sc.mean(setting, "sv_accuracy", sv, "score", coverage=_answered(sv))
        for cat, sub in sv.groupby("category"):
            sc.mean(setting, "sv_accuracy", sub, "score", slice_=f"category={cat}", coverage=_answered(sub))
        sv = sv.assign(question_id=sv["labels_d"].map(qid))
        pools = maia_pool_flags(sv, options)
        cov = float(pools["answered"].mean())
        sc.add(setting, "pool_consistency", pools, values=_bool(pools["pool_ok"]), coverage=cov)
        for cat, sub in pools.groupby("category"):
            sc.add(
                setting,
                "pool_consistency",
                sub,
                values=_bool(sub["pool_ok"]),
                slice_=f"category={cat}",
                coverage=float(sub["answered"].mean()),
            )
        # Table 12: total (8/8) and majority (4–7 of 8) agreement with the true statements.
        frac = (pools["pool_correct"] / pools["pairs"]).to_numpy(dtype=float)
        sc.add(setting, "pool_majority", pools, values=((frac >= 0.5) & (frac < 1.0)).astype(float), coverage=cov)
    if len(oe):
        oe_vals = _num(oe["score"])
        if not lenient:
            oe_vals[np.isnan(oe_vals)] = 0.0  # failed call / judge failure: not correct
        oe = oe.assign(score=oe_vals if not lenient else oe["score"])
        # coverage: answers with a verdict (judged, or empty and so not correct without a judge)
        cov = float(((oe["status"] == "unparseable") | (oe["judge_ok"] == True)).mean())  # noqa: E712
        sc.mean(setting, "oe_accuracy", oe, "score", coverage=cov)
        for cat, sub in oe.groupby("category"):
            sc.mean(setting, "oe_accuracy", sub, "score", slice_=f"category={cat}")
        for metric in MAIA_TEXT_METRICS:
            skipped = next(
                (
                    d["metrics_skipped"][metric]
                    for d in oe["detail"]
                    if (d or {}).get("metrics_skipped", {}).get(metric)
                ),
                None,
            )
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


VIMU_TASKS = ("OE", "EG", "RM", "SV")


def vimu_task_values(sub: pd.DataFrame, task: str, options: dict[str, Any]) -> np.ndarray:
    """Item scores in [0, 1] as the official scripts average them: EG / RM / SV set scores with
    a failed call as an empty selection (0); OE (total + 6) / 15 with an inference error at −1
    (already in ``score``) and rows without a judged total left out."""
    v = _num(sub["score"])
    if task != "OE":
        v[(sub["status"] == "call_failed").to_numpy()] = 0.0
    return v


def _score_vimu(setting: str, g: pd.DataFrame, sc: Scorer, primary: str, options: dict[str, Any]) -> None:
    tasks: dict[str, pd.DataFrame] = {}
    for task in VIMU_TASKS:
        sub = g[g["category"] == task].reset_index(drop=True)
        if len(sub):
            sub = sub.assign(score=vimu_task_values(sub, task, options))
            tasks[task] = sub
            sc.mean(
                setting,
                task,
                sub,
                "score",
                scale=100.0,
                coverage=float(sub["score"].notna().mean()) if task == "OE" else _answered(sub),
            )
    # SSU-Avg (RM, SV) and All-Avg (the four tasks): mean of task means, resampled jointly.
    for name, keys in (("SSU-Avg", ("RM", "SV")), ("All-Avg", ("OE", "EG", "RM", "SV"))):
        if not all(k in tasks for k in keys):
            continue
        sub = pd.concat([tasks[k] for k in keys], ignore_index=True)
        v, cat = _num(sub["score"]), sub["category"].to_numpy()
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
        if task not in tasks:
            continue
        sub = tasks[task]
        preds = [list((d or {}).get("pred_set") or []) for d in sub["detail"]]
        # a failed call has no parse detail: its gold set comes from the row (officially it is
        # an empty prediction scored against the question's gold)
        gold_col = sub["gold"] if "gold" in sub else pd.Series([None] * len(sub))
        golds = [
            list((d or {}).get("gold_set") or [x.strip() for x in str(gcol or "").split(",") if x.strip()])
            for d, gcol in zip(sub["detail"], gold_col)
        ]
        v = _num(sub["score"])
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
            coverage=_answered(sub),
        )
        for part in ("f1", "precision", "recall"):  # Fig. 6a (EG) Micro-F1; reported for RM / SV too
            sc.add(
                setting,
                f"micro_{part}",
                sub,
                stat=lambda w, p=preds, q=golds, k=part: micro_f1(p, q, w)[k],
                slice_=f"task={task}",
                coverage=_answered(sub),
            )
        comp = sub["detail"].map(lambda d: (d or {}).get("composition"))
        for kind in ("exact", "miss_only", "extra_only", "mixed", "unparseable"):
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
            for letter in VIMU_LETTERS:
                flag_p = np.array([letter in p for p in preds_ok], dtype=float)
                flag_g = np.array([letter in x for x in golds_ok], dtype=float)
                sc.add(
                    setting,
                    "option_affinity",
                    ok,
                    stat=lambda w, a=flag_p - flag_g: float((a * w).sum() / w.sum()),
                    slice_=f"task={task},option={letter}",
                )
            dist = frobenius(cooccurrence(preds_ok, VIMU_LETTERS), cooccurrence(golds_ok, VIMU_LETTERS))
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


# Hummus §6.1 thresholds, calibrated for all-MiniLM-L6-v2 (docs/evals.md "Hummus thresholds").
def _score_hummus(setting: str, g: pd.DataFrame, sc: Scorer, primary: str, options: dict[str, Any]) -> None:
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
                vals = _bool(ok["correct"])
            else:
                vals = np.array([(d or {}).get(key, np.nan) for d in ok["detail"]], dtype=float)
            sc.add(setting, metric, ok if len(ok) else sub.iloc[:0], values=vals)
