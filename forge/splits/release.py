"""Splits that keep a release's own split (imported items with ``release_split``).

A published benchmark that says which items are its test set keeps them there: every
leakage group holding such an item goes whole to that split (when a group holds items of
two release splits, the one named first in ``PRIORITY`` wins, then the config's split order),
and only the remaining groups are assigned by ``assign_splits``. Items sharing an image or a
video with a release-test item follow it into the test split (leakage stays 0); how many did
is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from forge.splits.assign import assign_splits
from forge.splits.config import SplitSizes

PRIORITY = ("test",)


@dataclass
class ReleaseSplitReport:
    kept: int = 0  # items whose release split was kept
    pulled: int = 0  # items without one that joined a release split with their group
    conflicts: int = 0  # groups holding two different release splits
    unknown: dict[str, int] = field(default_factory=dict)  # release splits not in the config, kept as named


def _present(v: object) -> bool:
    return isinstance(v, str) and v.strip() != ""


def assign_with_release_splits(
    items: pd.DataFrame, groups: pd.Series, sizes: SplitSizes, seed: object
) -> tuple[pd.DataFrame, ReleaseSplitReport]:
    rep = ReleaseSplitReport()
    if items.empty or "release_split" not in items or not items["release_split"].map(_present).any():
        return assign_splits(items, groups, sizes, seed), rep
    df = items[["item_id", "category", "release_split"]].copy()
    df["item_id"] = df["item_id"].astype(str)
    df["group_id"] = df["item_id"].map(groups)
    order = list(PRIORITY) + [s for s in sizes.names if s not in PRIORITY]
    fixed: dict[str, str] = {}
    for g, sub in df[df["release_split"].map(_present)].groupby("group_id"):
        names = sorted(
            set(sub["release_split"].str.strip()), key=lambda s: (order.index(s) if s in order else len(order), s)
        )
        rep.conflicts += len(names) > 1
        fixed[g] = names[0]
    held = df["group_id"].isin(fixed)
    rep.kept = int((held & df["release_split"].map(_present)).sum())
    rep.pulled = int((held & ~df["release_split"].map(_present)).sum())
    for s in set(fixed.values()) - set(sizes.names):
        rep.unknown[s] = int((df.loc[held, "group_id"].map(fixed) == s).sum())
    rest = items[~items["item_id"].astype(str).isin(df.loc[held, "item_id"])]
    parts = [
        pd.DataFrame(
            {
                "item_id": df.loc[held, "item_id"],
                "split": df.loc[held, "group_id"].map(fixed),
                "group_id": df.loc[held, "group_id"],
            }
        )
    ]
    if len(rest):
        parts.append(assign_splits(rest, groups, sizes, seed))
    out = pd.concat(parts, ignore_index=True).sort_values("item_id").reset_index(drop=True)
    return out, rep
