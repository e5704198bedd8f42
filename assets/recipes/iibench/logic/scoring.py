"""II-Bench scoring rules as the official ``eval.py`` counts (App. C): accuracy over every
question (an API error and an unreadable reply are wrong), its "Errors" and "Miss" columns,
and accuracy per label (domain, emotion, image type, difficulty, rhetoric), a question counted
under every image type and rhetoric device it lists (the spec's ``multi_label``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from forge.evals.scoring import Scorer, answered_share, as_float

SLICES = ("domain", "emotion", "image_type", "difficulty", "rhetoric")


def iibench_accuracy_values(g: pd.DataFrame, options: dict[str, Any]) -> np.ndarray:
    """eval.py: every question is in the denominator, an API error (a dict response) and an
    empty reply included, both not correct. Option ``iibench_exclude_api_errors`` leaves API
    errors out of the denominator instead."""
    v = as_float(g["score"])
    failed = (g["status"] == "call_failed").to_numpy()
    v[failed] = np.nan if options.get("iibench_exclude_api_errors") else 0.0
    return v


def score_setting(setting: str, g: pd.DataFrame, sc: Scorer, primary: str, options: dict[str, Any]) -> None:
    g = g.assign(score=iibench_accuracy_values(g, options))
    cov = answered_share(g)
    sc.mean(setting, "accuracy", g, "score", primary=True, coverage=cov)
    # eval.py's other two columns: "Errors" (API errors) and "Miss" (no label), over all questions.
    sc.add(setting, "error_rate", g, values=(g["status"] == "call_failed").to_numpy(dtype=float))
    sc.add(
        setting,
        "miss_rate",
        g,
        values=((g["status"] == "unparseable") & (g["parse_method"] == "miss")).to_numpy(dtype=float),
    )
    # a question counts under every image type and rhetoric device its meta_data lists
    # (the spec's multi_label), as Tables 6 and 7 count it
    for key in SLICES:
        for val, part in sc.label_slices(g, key):
            sc.mean(setting, "accuracy", part, "score", slice_=f"{key}={val}", coverage=answered_share(part))
