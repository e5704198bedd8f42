"""Similarity thresholds calibrated for the embedder in use (e.g. Hummus Naming / ImageLabel).

The paper's 0.6 is a LaBSE cosine chosen by inspecting answers; other sentence embedders put
related and unrelated pairs at other cosines (all-MiniLM-L6-v2 scores unrelated words near 0.1–0.3
where LaBSE sits higher), so the number does not transfer. ``calibrate_threshold`` picks, from
hand-labelled match / no-match pairs (a paper's own file, e.g. Hummus's
``assets/recipes/hummus/logic/similarity_calibration.yaml``), the cosine
that maximises balanced accuracy; ties go to the midpoint of the widest separating gap.
``perf/calibrate_hummus_thresholds.py`` prints the figures; the paper's evals.yaml holds the
result, and a test re-derives it so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from forge.storage.yaml_files import read_yaml


def calibrate_threshold(scores: Sequence[float], labels: Sequence[bool]) -> dict[str, float]:
    """The cut (score ≥ cut = match) with the best balanced accuracy over candidate cuts at the
    midpoints between consecutive distinct scores; among equals the one in the widest gap."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    if not y.any() or y.all():
        raise ValueError("need both match and no-match pairs")
    u = np.unique(s)
    cands = (u[:-1] + u[1:]) / 2 if len(u) > 1 else u
    best: tuple[float, float, float] | None = None
    for k, c in enumerate(cands):
        pred = s >= c
        bacc = (pred[y].mean() + (~pred[~y]).mean()) / 2
        gap = float(u[k + 1] - u[k]) if len(u) > 1 else 0.0
        if best is None or (bacc, gap) > (best[1], best[2]):
            best = (float(c), float(bacc), gap)
    assert best is not None
    return {"threshold": best[0], "balanced_accuracy": best[1], "gap": best[2]}


def load_pairs(path: str | Path) -> dict[str, Any]:
    return read_yaml(path)


def calibrate_task(embedder: Any, task: str, pairs: dict[str, Any]) -> dict[str, float]:
    """Threshold for one task (``naming`` / ``image_label``) of ``pairs`` with ``embedder.similarity``."""
    doc = pairs[task]
    rows = [(a, b, True) for a, b in doc["match"]] + [(a, b, False) for a, b in doc["no_match"]]
    sims = [float(x) for x in np.diag(embedder.similarity([p for _, p, _ in rows], [g for g, _, _ in rows]))]
    out = calibrate_threshold(sims, [m for *_, m in rows])
    out["match_mean"] = float(np.mean([x for x, (*_, m) in zip(sims, rows) if m]))
    out["no_match_mean"] = float(np.mean([x for x, (*_, m) in zip(sims, rows) if not m]))
    return out
