"""Judges, embedding/overlap scores and the aggregate ``eval_scores`` rows per benchmark.

Every aggregate row: (setting, metric, slice, value, ci_low, ci_high, n, coverage, primary).
``n`` = items in the slice, ``coverage`` = share of them with a score (an item whose judge
failed, or whose call failed, has none: it is left out of the mean, never filled in).
Unparseable replies are the model's failure and score 0 (success rate reported separately).
CIs: cluster bootstrap by ``source_item_id`` (forge/evals/bootstrap.py).

What differs between benchmarks comes from their ``EvalSpec`` (forge/benchmarks/spec.py): the
judge's inputs and reading, which text replies get reference-overlap metrics and against what,
and each benchmark's own ``score_setting`` (``assets/recipes/<name>/logic/scoring.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from forge.benchmarks.spec import BenchmarkSpec, TextReference
from forge.evals import textmetrics
from forge.evals.bootstrap import cluster_bootstrap
from forge.evals.scorers import (
    all_correct,
    weighted_mean,
)
from forge.items.cells import as_list, as_object
from forge.llm.types import LLMRequest, LLMResult


def reply_kind(spec: BenchmarkSpec, row: dict[str, Any]) -> str | None:
    """How a prediction's reply was read: its task's kind, or ``text`` for a setting that asked
    for words instead of a letter (as ``forge.evals.requests.build_requests`` decides)."""
    if ((row.get("detail") or {}).get("context") or {}).get("answer_type") == "free_form":
        return "text"
    return spec.eval.kinds.get(row["task"])


# -- judges ----------------------------------------------------------------------------------


def reference_variables(row: dict[str, Any], item: dict[str, Any]) -> dict[str, str]:
    """The default judge inputs: the question, the parsed answer and the numbered references."""
    refs = as_list(item.get("references"))
    return {
        "question": item["question"],
        "answer": row["parsed"],
        "references": "\n".join(f"R{k}: {t}" for k, t in enumerate(refs, start=1)),
    }


def judge_requests(
    spec: BenchmarkSpec, rows: list[dict[str, Any]], items: dict[str, dict[str, Any]], prompt: Any
) -> list[tuple[int, LLMRequest]]:
    """(row index, judge request) for every open-ended prediction the judge rates: the parsed
    answers, and the unreadable replies too where the spec says ``judge_unparseable`` (else
    an empty answer is simply not correct, see ``unparseable_open_ended``)."""
    judged = ("ok", "unparseable") if spec.eval.judge_unparseable else ("ok",)
    out = []
    for i, r in enumerate(rows):
        if r["task"] != "open_ended" or r["status"] not in judged:
            continue
        rid = f"{r['setting']}:{r['item_id']}"
        item = items[r["item_id"]]
        v = spec.hooks.judge_variables(r, item) or reference_variables(r, item)  # None: the shared inputs
        out.append((i, LLMRequest(item_id=rid, prompt=prompt, variables=v, params={"temperature": 0})))
    return out


def apply_judge(
    spec: BenchmarkSpec,
    rows: list[dict[str, Any]],
    pairs: list[tuple[int, LLMRequest]],
    results: list[LLMResult],
    options: dict[str, Any] | None = None,
) -> None:
    """Judge verdicts into rows, read by the paper's ``hooks.read_judgement`` (shared: the label);
    a judge reply it cannot use leaves the row unscored (a judge failure, never a guess)."""
    read = spec.hooks.read_judgement
    opts = dict(options or {})
    for (i, _), res in zip(pairs, results, strict=True):
        r = rows[i]
        r.update(judge_model=res.model, judge_prompt_hash=res.prompt_hash)
        if not res.ok:
            r.update(judge_ok=False, judge_error=f"{res.error_class}: {res.error}", score=None, correct=None)
            continue
        data = res.data or {}
        r["judge_json"] = json.dumps(data, ensure_ascii=False)
        try:
            read(r, data, opts)
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


def unparseable_open_ended(spec: BenchmarkSpec, rows: list[dict[str, Any]]) -> None:
    """Open-ended rows scored without a judge: an empty/echo reply is the model's failure, 0
    (unless the spec's judge rates every reply, ``judge_unparseable``); a failed call gets the
    paper's ``hooks.judge_failed_call`` verdict where it has one, else stays unscored."""
    for r in rows:
        if r["task"] != "open_ended":
            continue
        if r["status"] == "unparseable" and not spec.eval.judge_unparseable:
            r.update(score=0.0, correct=False)
        elif r["status"] == "call_failed":
            spec.hooks.judge_failed_call(r)


# -- embedding / overlap item scores ---------------------------------------------------------


def text_references(spec: BenchmarkSpec, item: dict[str, Any]) -> list[str]:
    """What a free-text reply is compared with (``EvalSpec.text_reference``)."""
    if spec.eval.text_reference == TextReference.CORRECT_OPTION:
        opts = as_list(item.get("options"))
        k = ord(str(item["answer"]).strip()[:1] or "A") - 65
        return [str(opts[k])] if 0 <= k < len(opts) else []
    return [str(x) for x in as_list(item.get("references"))]


def text_metric_scores(
    spec: BenchmarkSpec,
    rows: list[dict[str, Any]],
    items: dict[str, dict[str, Any]],
    metrics_cfg: dict[str, Any] | None = None,
) -> None:
    """BLEU, ROUGE-L, METEOR, CIDEr, BERTScore of each text reply against its references
    (``forge.evals.textmetrics``), for a spec with ``text_metrics``. An empty answer scores as
    the empty string; a failed call has no value. Metrics that cannot run here are recorded
    with the reason."""
    if not spec.eval.text_metrics:
        return
    idx = [i for i, r in enumerate(rows) if r["status"] in ("ok", "unparseable") and reply_kind(spec, r) == "text"]
    if not idx:
        return
    preds = [rows[i]["parsed"] if rows[i]["status"] == "ok" else "" for i in idx]
    refs = [text_references(spec, items[rows[i]["item_id"]]) for i in idx]
    values, skipped = textmetrics.similarity_table(preds, refs, (metrics_cfg or {}).get("bertscore"))
    for k, i in enumerate(idx):
        d = rows[i]["detail"]
        for name, arr in values.items():
            d[name] = None if np.isnan(arr[k]) else float(arr[k])
        if skipped:
            d["metrics_skipped"] = skipped


def similarity_scores(
    spec: BenchmarkSpec,
    rows: list[dict[str, Any]],
    items: dict[str, dict[str, Any]],
    embedder: Any,
    thresholds: dict[str, float],
    metrics_cfg: dict[str, Any] | None = None,
) -> None:
    """Reference-overlap metrics of text replies (``text_metrics``), and for a spec with
    ``similarity``: the embedding similarity of text replies to their references, and the
    naming / image_label / box / caption / explanation scores."""
    text_metric_scores(spec, rows, items, metrics_cfg)
    if not spec.eval.similarity:
        return
    pairs: list[tuple[int, list[str]]] = []
    for i, r in enumerate(rows):
        if r["status"] != "ok":
            if r["status"] == "unparseable" and spec.eval.unparseable_is_wrong:
                r.update(score=0.0, correct=False)
            continue
        item = items[r["item_id"]]
        refs = [str(x) for x in as_list(item.get("references")) or [item["answer"]]]
        if reply_kind(spec, r) == "text":
            pairs.append((i, refs))
        else:
            embed = spec.hooks.score_structured(r, item, refs, thresholds)
            if embed:
                pairs.append((i, embed))
    if pairs and embedder is not None:
        preds = [rows[i]["parsed"] for i, _ in pairs]
        flat = sorted({t for _, refs in pairs for t in refs})
        pos = {t: k for k, t in enumerate(flat)}
        sim = embedder.similarity(preds, flat)
        for n, (i, refs) in enumerate(pairs):
            s = float(max(sim[n, pos[t]] for t in refs))
            r = rows[i]
            r["detail"]["similarity"] = s
            if spec.eval.similarity_is_score:
                r.update(score=s, correct=s >= thresholds.get(r["task"], 0.6))


# -- aggregation -----------------------------------------------------------------------------


def label_slices(g: pd.DataFrame, key: str, multi_label: tuple[str, ...] = ()) -> list[tuple[str, pd.DataFrame]]:
    """(value, rows) of each slice of the ``labels`` key ``key`` (column ``labels_d``), in value
    order. A key of ``multi_label`` (``EvalSpec.multi_label``) lists every slice an item belongs to
    (one string is a list of one): the item counts in each, so the slices' n may sum past the
    item count, as the paper's tables count. Any other key holds one value per item; a list there
    is a ``ValueError`` naming the key and the item (the spec must declare it multi-label)."""
    multi = key in multi_label
    pos: dict[str, list[int]] = {}
    for i, d in enumerate(g["labels_d"]):
        v = (d or {}).get(key)
        if isinstance(v, (list, tuple, np.ndarray)):
            if not multi:
                item = g["item_id"].iloc[i] if "item_id" in g else i
                raise ValueError(
                    f"labels key {key!r} of item {item} lists {list(v)!r}; the spec declares it single-label"
                )
            vals = list(dict.fromkeys(str(x) for x in v if x not in (None, "")))
        else:
            vals = [] if v in (None, "") or (isinstance(v, float) and np.isnan(v)) else [str(v)]
        for x in vals:
            pos.setdefault(x, []).append(i)
    return [(x, g.iloc[pos[x]]) for x in sorted(pos)]


class Scorer:
    def __init__(self, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05):
        self.n_boot, self.seed, self.alpha = n_boot, seed, alpha
        self.rows: list[dict[str, Any]] = []
        # the benchmark's multi-label ``labels`` keys (``EvalSpec.multi_label``; set by score_benchmark)
        self.multi_label: tuple[str, ...] = ()

    def label_slices(self, g: pd.DataFrame, key: str) -> list[tuple[str, pd.DataFrame]]:
        """``label_slices`` with this benchmark's multi-label keys."""
        return label_slices(g, key, self.multi_label)

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


BASELINE_SLICE = "baseline="  # a baseline a scorer computes next to a model (e.g. a paper's random baseline)


def baseline_scores(scores: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Baseline name → its rows as a model of its own (slice ``all``, backend = the name), from the
    rows a scorer wrote in slice ``baseline=<name>`` (e.g. a random Classification baseline over
    100 iterations, as one paper's §6.1 reports). A baseline does not read the model's replies, so one copy per
    setting × metric serves; it is primary where the models' metric is, so it is a leaderboard row."""
    if scores.empty:
        return {}
    base = scores[scores["slice"].astype(str).str.startswith(BASELINE_SLICE)]
    main = scores[(scores["slice"] == "all") & scores["primary"].astype(bool)]
    primary = set(zip(main["setting"], main["metric"], strict=True))
    out = {}
    for sl, g in base.groupby("slice", sort=True):
        name = str(sl).removeprefix(BASELINE_SLICE)
        rows = g.drop_duplicates(["setting", "metric"]).reset_index(drop=True)
        rows = rows.assign(model=name, slice="all", backend=name)
        rows["primary"] = [(s, m) in primary for s, m in zip(rows["setting"], rows["metric"], strict=True)]
        out[name] = rows
    return out


def collapse_variants(preds: pd.DataFrame) -> pd.DataFrame:
    """Circular evaluation: one row per item, right only if right under every rotation."""
    base = preds[preds["variant"] == 0].copy()
    if (preds["variant"] > 0).any():
        agg = preds.groupby(["setting", "item_id"])["correct"].apply(lambda s: all_correct(s.tolist()))
        base["circular_correct"] = [agg.get((s, i)) for s, i in zip(base["setting"], base["item_id"])]
    return base


def as_float(s: pd.Series) -> np.ndarray:
    """Numbers of a column, NaN where there is none (a writable copy)."""
    return np.array(pd.to_numeric(s, errors="coerce"), dtype=float)


def as_flags(s: pd.Series) -> np.ndarray:
    """1.0 / 0.0 of a column of booleans, NaN where unknown."""
    return np.array([np.nan if v is None or (isinstance(v, float) and np.isnan(v)) else float(bool(v)) for v in s])


def answered_share(g: pd.DataFrame) -> float:
    """Coverage: share of items whose call returned a reply (API errors excluded)."""
    return float((g["status"] != "call_failed").mean()) if len(g) else float("nan")


def skipped_reason(g: pd.DataFrame, metric: str) -> str | None:
    """Why ``metric`` could not be computed for these rows (``text_metric_scores``), or None."""
    return next(
        (d["metrics_skipped"][metric] for d in g["detail"] if (d or {}).get("metrics_skipped", {}).get(metric)),
        None,
    )


def score_benchmark(
    spec: BenchmarkSpec, preds: pd.DataFrame, items: pd.DataFrame, sc: Scorer, options: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Aggregate rows of one model. ``spec``: the benchmark, whose ``hooks.score_setting`` and
    ``eval.primary_metric`` score each setting; ``options``: its named scoring options (config/evals.yaml ``benchmarks.<name>.scoring``; all off = the
    paper's own rules)."""
    if preds.empty:
        return []
    items_by = items.set_index("item_id")
    full = preds.copy()
    df = collapse_variants(full)
    df["labels_d"] = [as_object(items_by.at[i, "labels"]) if i in items_by.index else {} for i in df["item_id"]]
    if "source" in items_by.columns:
        df["source"] = [items_by.at[i, "source"] if i in items_by.index else None for i in df["item_id"]]
    sc.multi_label = tuple(spec.eval.multi_label)
    for setting, g in df.groupby("setting", sort=False):
        g = g.reset_index(drop=True)
        sc.success(setting, g)
        if "circular_correct" in g and g["circular_correct"].notna().any():
            sc.add(setting, "circular_accuracy", g, values=as_flags(g["circular_correct"]))
        spec.hooks.score_setting(setting, g, sc, spec.eval.primary_metric, dict(options or {}))
    return sc.rows
