"""Stratified assignment of whole leakage groups to splits (deterministic for a seed).

Every split gets a target size (``SplitSizes.targets``) and, inside it, a target count per
category (the split's share of each category's items). Groups are visited largest first
(ties in a seeded order) and each goes to the split where it most reduces the squared
error between counts and targets — the split totals weigh more than the per-category
counts, so fixed sizes (e.g. 15 / 20 items) are met as closely as group sizes allow while
the category mix of every split follows the whole. A group never splits, so no source,
channel or near-duplicate image crosses splits (see ``leakage.py``).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from forge.checks.mcq import seeded_rng
from forge.splits.config import SplitSizes

TOTAL_WEIGHT = 4.0  # a unit of split-size error costs this many units of category error


def assign_splits(items: pd.DataFrame, groups: pd.Series, sizes: SplitSizes, seed: object) -> pd.DataFrame:
    """``items`` (item_id, category) + ``groups`` (item_id → group_id) → item_id, split, group_id."""
    if items.empty:
        return pd.DataFrame(columns=["item_id", "split", "group_id"])
    df = items[["item_id", "category"]].copy()
    df["item_id"] = df["item_id"].astype(str)
    df["category"] = df["category"].fillna("(none)").astype(str)
    df["group_id"] = df["item_id"].map(groups)
    if df["group_id"].isna().any():
        raise ValueError("every item needs a leakage group")
    names = sizes.names
    n = len(df)
    split_t = sizes.targets(n)
    cat_n = df["category"].value_counts().to_dict()
    cat_t = {s: {c: split_t[s] * k / n for c, k in cat_n.items()} for s in names}
    count = {s: 0 for s in names}
    cat_count: dict[str, Counter] = {s: Counter() for s in names}

    group_cats = {g: Counter(sub["category"]) for g, sub in df.groupby("group_id", sort=True)}
    order = sorted(group_cats)
    seeded_rng("splits", seed).shuffle(order)
    order.sort(key=lambda g: -sum(group_cats[g].values()))  # stable: seeded order among equal sizes

    def delta(s: str, gc: Counter) -> float:
        """Change in cost if the group joins split ``s`` (only its terms change)."""
        m = sum(gc.values())
        d = TOTAL_WEIGHT * ((count[s] + m - split_t[s]) ** 2 - (count[s] - split_t[s]) ** 2)
        for c, k in gc.items():
            cur, tgt = cat_count[s][c], cat_t[s][c]
            d += (cur + k - tgt) ** 2 - (cur - tgt) ** 2
        return d

    split_of_group: dict[str, str] = {}
    for g in order:
        gc = group_cats[g]
        costs = np.array([delta(s, gc) for s in names])
        s = names[int(np.argmin(costs))]  # ties: the first split in config order
        split_of_group[g] = s
        count[s] += sum(gc.values())
        cat_count[s].update(gc)
    df["split"] = df["group_id"].map(split_of_group)
    return df[["item_id", "split", "group_id"]].sort_values("item_id").reset_index(drop=True)


def split_summary(assigned: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """Items per split and category (a wide table: rows categories, columns splits)."""
    if assigned.empty:
        return pd.DataFrame()
    m = assigned.merge(items[["item_id", "category"]], on="item_id")
    return pd.crosstab(m["category"].fillna("(none)"), m["split"], margins=True, margins_name="total")


def stratification_error(assigned: pd.DataFrame, items: pd.DataFrame) -> float:
    """Largest |share of a category in a split − its share overall| (0 = perfect)."""
    if assigned.empty:
        return 0.0
    m = assigned.merge(items[["item_id", "category"]], on="item_id")
    m["category"] = m["category"].fillna("(none)")
    overall = m["category"].value_counts(normalize=True)
    worst = 0.0
    for _, g in m.groupby("split"):
        share = g["category"].value_counts(normalize=True).reindex(overall.index, fill_value=0.0)
        worst = max(worst, float((share - overall).abs().max()))
    return worst
