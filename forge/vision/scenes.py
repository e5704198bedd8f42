"""Rich-scene selection (VAGUE §4.1.2): keep the frames with the most objects and people.

VAGUE sorts frames by the number of objects RAM found and keeps the top 4,000, and needs at
least one person (two for interaction scenes) so a question can address someone. Here:
per source, frames are ranked by distinct tags, then persons, then frame id (stable);
frames below ``min_persons`` / ``min_tags`` are ineligible; of the eligible ones the top
``top_n`` and/or top ``top_fraction`` are selected (the smaller cut wins when both are set).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

RICH_COLUMNS = ["frame_id", "batch", "source", "n_tags", "n_persons", "rank", "selected", "reason"]


@dataclass(frozen=True)
class RichSceneRule:
    min_persons: int = 1
    min_tags: int = 1
    top_n: int | None = None
    top_fraction: float | None = 0.5

    def cutoff(self, n_eligible: int) -> int:
        cut = n_eligible
        if self.top_n is not None:
            cut = min(cut, self.top_n)
        if self.top_fraction is not None:
            cut = min(cut, math.ceil(self.top_fraction * n_eligible))
        return max(0, cut)


def count_persons(detections: pd.DataFrame, person_class: str = "person") -> pd.Series:
    if detections.empty:
        return pd.Series(dtype="int64", name="n_persons")
    d = detections[detections["class_name"] == person_class]
    return d.groupby("frame_id").size().rename("n_persons")


def rank_rich_scenes(
    frames: pd.DataFrame, tags: pd.DataFrame, n_persons: pd.Series, rule: RichSceneRule
) -> pd.DataFrame:
    """``frames``: frame_id, batch, source (the frames vision actually saw)."""
    if frames.empty:
        return pd.DataFrame(columns=RICH_COLUMNS)
    n_tags = tags.groupby("frame_id")["tag"].nunique() if not tags.empty else pd.Series(dtype="int64")
    df = frames[["frame_id", "batch", "source"]].copy()
    df["n_tags"] = df["frame_id"].map(n_tags).fillna(0).astype("int64")
    df["n_persons"] = df["frame_id"].map(n_persons).fillna(0).astype("int64")
    df = df.sort_values(["source", "n_tags", "n_persons", "frame_id"], ascending=[True, False, False, True])
    df["rank"] = df.groupby("source").cumcount() + 1
    eligible = (df["n_persons"] >= rule.min_persons) & (df["n_tags"] >= rule.min_tags)
    df["reason"] = "selected"
    df.loc[df["n_tags"] < rule.min_tags, "reason"] = "too_few_tags"
    df.loc[df["n_persons"] < rule.min_persons, "reason"] = "too_few_persons"
    df["selected"] = False
    for _, idx in df[eligible].groupby("source").groups.items():
        ranked = df.loc[idx].sort_values("rank")
        cut = rule.cutoff(len(ranked))
        df.loc[ranked.index[:cut], "selected"] = True
        df.loc[ranked.index[cut:], "reason"] = "below_cutoff"
    return df[RICH_COLUMNS].reset_index(drop=True)
