"""Inter-reviewer agreement: Krippendorff's alpha (nominal) from the ``krippendorff`` package.

Each unit is one item revision judged by two or more reviewers; a reviewer's value is 1 for
accept (an edit counts as accept: the reviewer keeps the item) and 0 for reject. Alpha
handles missing values (not every reviewer sees every item), which Fleiss' kappa does not.
Dagster-free.
"""

from __future__ import annotations

from typing import Any

import krippendorff
import numpy as np
import pandas as pd

VALUE = {"accept": 1.0, "edit": 1.0, "reject": 0.0}


def reliability(verdicts: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """reviewers × units matrix (NaN where a reviewer did not judge the unit), unit keys."""
    v = verdicts[verdicts["verdict"].isin(list(VALUE))]
    v = v.assign(unit=v["item_id"].astype(str) + "@" + v["revision"].astype(str), value=v["verdict"].map(VALUE))
    counts = v.groupby("unit")["reviewer"].nunique()
    v = v[v["unit"].isin(counts[counts >= 2].index)]
    if v.empty:
        return np.empty((0, 0)), []
    table = v.drop_duplicates(["unit", "reviewer"], keep="last").pivot(index="reviewer", columns="unit", values="value")
    return table.to_numpy(dtype=float), [str(c) for c in table.columns]


def alpha(verdicts: pd.DataFrame) -> dict[str, Any]:
    """{alpha, units, reviewers, note}: alpha is None when it is undefined (fewer than two
    units judged twice, or every verdict the same value)."""
    data, units = reliability(verdicts)
    out: dict[str, Any] = {"alpha": None, "units": len(units), "reviewers": int(data.shape[0])}
    if len(units) < 2:
        out["note"] = "fewer than two items judged by two or more reviewers"
        return out
    try:
        out["alpha"] = round(float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")), 4)
    except ValueError as exc:  # every verdict the same value: agreement is total but alpha is undefined
        out["note"] = f"undefined: {exc}"
    return out


def by_category(verdicts: pd.DataFrame, categories: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Alpha per item category (``categories``: item_id → category)."""
    v = verdicts.assign(category=verdicts["item_id"].map(categories).fillna("unknown"))
    return {str(c): alpha(g) for c, g in v.groupby("category", sort=True)}
