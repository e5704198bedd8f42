"""Per-annotator human baselines, as II-Bench reports them (Table 3: Human_avg 90.3 %, Human_best
98.2 %): each person's answers are scored on their own by the benchmark's scorers, with n and a
cluster-bootstrap CI; ``human (avg)`` is the mean of their scores and ``human (best)`` the person
with the highest primary score (slice ``all``), every slice of that one person. Dagster-free.

The average's interval resamples items, not people: one cluster draw (``source_item_id``) is shared
by every person, each person's statistic is recomputed on the draw, and their mean is the
replicate. Any metric a scorer writes (a mean, an F1, a pool's all-right rate) resamples the same
way, because the scorers hand ``Scorer.add`` a statistic of row weights (forge/evals/bootstrap.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from forge.benchmarks.spec import BenchmarkSpec
from forge.evals.bootstrap import cluster_bootstrap
from forge.evals.scorers import weighted_mean
from forge.evals.scoring import Scorer, score_benchmark

AVG, BEST = "human (avg)", "human (best)"  # the leaderboard's model names
PREFIX = "human:"  # a person's predictions and scores: model ``human:<person>``

Key = tuple[str, str, str]  # setting, metric, slice


def person_model(person: str) -> str:
    return f"{PREFIX}{person}"


class KeepingScorer(Scorer):
    """A ``Scorer`` that also keeps each row's statistic and clusters, so the people's average
    can be resampled on a shared draw (``average_rows``)."""

    def __init__(self, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05):
        super().__init__(n_boot, seed, alpha)
        self.stats: dict[Key, tuple[Callable[[np.ndarray], float], list[Any], float, list[str]]] = {}

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
        super().add(setting, metric, df, values, stat, slice_, primary, scale, coverage)
        if df.empty:
            return
        if stat is None:
            v = np.asarray(values, dtype=float)
            stat = lambda w, v=v: weighted_mean(v, w)  # noqa: E731 - as Scorer.add builds it
        ids = [str(i) for i in df["item_id"]] if "item_id" in df else []
        self.stats[(setting, metric, slice_)] = (stat, df["source_item_id"].tolist(), scale, ids)


@dataclass
class PersonScores:
    person: str
    rows: list[dict[str, Any]]
    stats: dict[Key, tuple[Callable[[np.ndarray], float], list[Any], float, list[str]]] = field(default_factory=dict)

    def primary(self, setting: str) -> float | None:
        for r in self.rows:
            if r["primary"] and r["slice"] == "all" and r["setting"] == setting:
                return r["value"]
        return None


def score_person(
    spec: BenchmarkSpec,
    person: str,
    preds: pd.DataFrame,
    items: pd.DataFrame,
    boot: tuple[int, int, float] = (1000, 0, 0.05),
    options: dict[str, Any] | None = None,
) -> PersonScores:
    """One person's predictions (rows of ``eval_predictions``, ``detail`` as dicts) scored by the
    benchmark's own scorers."""
    sc = KeepingScorer(*boot)
    rows = score_benchmark(spec, preds, items, sc, options)
    return PersonScores(person, rows, sc.stats)


def _nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def average_rows(people: list[PersonScores], boot: tuple[int, int, float] = (1000, 0, 0.05)) -> list[dict[str, Any]]:
    """``human (avg)``: per setting × metric × slice, the mean of the people's values (those with
    a value there), its interval from a cluster bootstrap over items shared by every person, ``n``
    the distinct items behind it and ``coverage`` the people's mean coverage."""
    by_key: dict[Key, list[tuple[PersonScores, dict[str, Any]]]] = {}
    for p in people:
        for r in p.rows:
            by_key.setdefault((r["setting"], r["metric"], r["slice"]), []).append((p, r))
    out = []
    for key, found in by_key.items():
        valued = [(p, r) for p, r in found if not _nan(r["value"]) and key in p.stats]
        first = found[0][1]
        if not valued:  # a metric that could not be computed (a ``skipped`` row): said once
            out.append({**first, "value": None, "ci_low": None, "ci_high": None})
            continue
        parts = [p.stats[key] for p, _ in valued]
        bounds = np.cumsum([0] + [len(c) for _, c, _, _ in parts])

        def stat(w: np.ndarray, parts=parts, bounds=bounds) -> float:
            vals = [s(w[bounds[k] : bounds[k + 1]]) for k, (s, _, _, _) in enumerate(parts)]
            vals = [v for v in vals if not np.isnan(v)]
            return float(np.mean(vals)) if vals else float("nan")

        clusters = [c for _, cs, _, _ in parts for c in cs]
        lo, hi = cluster_bootstrap(stat, clusters, *boot)
        scale = parts[0][2]
        items = {i for _, _, _, ids in parts for i in ids}
        out.append(
            {
                **first,
                "value": float(np.mean([r["value"] for _, r in valued])),
                "ci_low": None if np.isnan(lo) else lo * scale,
                "ci_high": None if np.isnan(hi) else hi * scale,
                "n": len(items) or int(max(r["n"] for _, r in valued)),
                "coverage": float(np.mean([r["coverage"] for _, r in valued if not _nan(r["coverage"])] or [0.0])),
                "primary": any(bool(r["primary"]) for _, r in valued),
            }
        )
    return out


def items_of(p: PersonScores) -> int:
    """How many items the person's primary score stands on (its ``n``)."""
    return int(next((r["n"] for r in p.rows if r["primary"] and r["slice"] == "all"), 0) or 0)


def best_person(people: list[PersonScores], setting: str, min_items: int = 1) -> PersonScores | None:
    """The person with the highest primary score in ``setting`` among those who answered at least
    ``min_items`` items (one lucky answer is no best; ties: more items, then name)."""
    ranked = [(p.primary(setting), items_of(p), p) for p in people]
    ranked = [t for t in ranked if not _nan(t[0]) and t[1] >= min_items]
    if not ranked:
        return None
    return sorted(ranked, key=lambda t: (-t[0], -t[1], t[2].person))[0][2]


def baseline_frames(
    people: list[PersonScores], setting: str, boot: tuple[int, int, float] = (1000, 0, 0.05), best_min_items: int = 1
) -> tuple[pd.DataFrame, pd.DataFrame, str | None]:
    """(per-person rows with ``person`` and ``best``, the ``human (avg)`` + ``human (best)`` rows, the
    best person: one with at least ``best_min_items`` items; the best rows' ``n`` is theirs). Rows
    carry the ``eval_scores`` columns the scorers write, plus ``model``."""
    best = best_person(people, setting, best_min_items)
    per = [
        {**r, "model": person_model(p.person), "person": p.person, "best": best is not None and p is best}
        for p in people
        for r in p.rows
    ]
    summary = [{**r, "model": AVG} for r in average_rows(people, boot)] if people else []
    if best is not None:
        summary += [{**r, "model": BEST} for r in best.rows]
    return pd.DataFrame(per), pd.DataFrame(summary), best.person if best is not None else None
