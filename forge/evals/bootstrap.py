"""Cluster bootstrap: confidence intervals that resample source videos, not questions.

Questions built from the same video are correlated (several tasks per clip, or a pool of
statement pairs per question); treating them as independent would make intervals too
narrow. Each replicate draws clusters (``source_item_id``) with replacement and turns the
draw into row weights (how often each row's cluster was drawn); the statistic is a function
of those weights, so any metric (a mean, an F1, a mean of task means) is resampled the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def cluster_ids(clusters: Sequence[object]) -> np.ndarray:
    """Integer cluster index per row (a missing cluster id is its own cluster)."""
    keys = [
        f"\0row{i}" if c is None or (isinstance(c, float) and np.isnan(c)) else str(c) for i, c in enumerate(clusters)
    ]
    _, idx = np.unique(np.array(keys, dtype=object).astype(str), return_inverse=True)
    return idx


def cluster_bootstrap(
    stat: Callable[[np.ndarray], float],
    clusters: Sequence[object],
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[float, float]:
    """Percentile interval of ``stat(weights)`` over ``n_boot`` cluster resamples.

    ``stat`` receives one weight per row (all ones = the point estimate). Replicates where the
    statistic is undefined (NaN: nothing scored in the draw) are dropped; with fewer than two
    clusters or no defined replicate the interval is (NaN, NaN).
    """
    idx = cluster_ids(clusters)
    k = int(idx.max()) + 1 if len(idx) else 0
    if k < 2 or n_boot <= 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(k, np.full(k, 1.0 / k), size=n_boot)
    vals = np.array([stat(counts[b][idx].astype(float)) for b in range(n_boot)])
    vals = vals[~np.isnan(vals)]
    if not len(vals):
        return float("nan"), float("nan")
    lo, hi = np.quantile(vals, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)
