"""Leakage groups: items that must share a split, and the audit that finds leaks.

Two items are *linked* when they share a source video/image (``source_item_id``), a channel
(``channel``), a near-duplicate group of the trunk's dedup (``duplicates.group_id`` of one of
their frames), or when any of their images are within ``phash_threshold`` bits of each other
(pHash from ``frame_hashes``; media that is not a known frame is hashed here with the
trunk's ``forge.media.hashing``). Leakage groups are the connected components of the
item–key graph (``forge.media.dedup.components``), so linking is transitive: a~b and b~c
puts a and c together.

``cross_split_pairs`` audits any split assignment (including a hand-made one) with the
same links and reports every linked item pair that sits in two different splits.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from forge.media.dedup import components, pairs_within
from forge.media.hashing import hash_image, hex_to_int64

KEY_KINDS = ("source_item_id", "channel", "near_duplicate")


def _present(v: object) -> bool:
    return v is not None and not (isinstance(v, float) and np.isnan(v)) and str(v).strip() != ""


def _paths(v: object) -> list[str]:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return []
    return [str(p) for p in list(v) if _present(p)]


def item_frames(items: pd.DataFrame, frames: pd.DataFrame) -> pd.DataFrame:
    """(item_id, frame_id, path) for every frame an item shows or was built from.

    Media paths are matched to ``frames.path``; ``unit_id`` also matches a frame id or a
    clip id (then every frame of that clip counts, so two clips of a re-upload are linked).
    """
    rows = [
        (r.item_id, p) for r in items[["item_id", "media_paths"]].itertuples(index=False) for p in _paths(r.media_paths)
    ]
    media = pd.DataFrame(rows, columns=["item_id", "path"])
    if frames is None or frames.empty:
        media["frame_id"] = None
        return media[["item_id", "frame_id", "path"]]
    fr = frames[["frame_id", "path"] + (["clip_id"] if "clip_id" in frames else [])].drop_duplicates("frame_id")
    by_path = media.merge(fr[["frame_id", "path"]].drop_duplicates("path"), on="path", how="left")
    out = [by_path]
    if "unit_id" in items:
        units = items[["item_id", "unit_id"]].dropna()
        out.append(
            units.merge(fr[["frame_id", "path"]], left_on="unit_id", right_on="frame_id")[
                ["item_id", "frame_id", "path"]
            ]
        )
        if "clip_id" in fr:
            out.append(
                units.merge(fr.dropna(subset=["clip_id"]), left_on="unit_id", right_on="clip_id")[
                    ["item_id", "frame_id", "path"]
                ]
            )
    return pd.concat(out, ignore_index=True).drop_duplicates(["item_id", "frame_id", "path"]).reset_index(drop=True)


def item_hashes(links: pd.DataFrame, frame_hashes: pd.DataFrame | None, data_dir: Path | None = None) -> pd.DataFrame:
    """(item_id, phash_int) per item image: from ``frame_hashes``, else hashed from the file."""
    fh = (
        frame_hashes
        if frame_hashes is not None and not frame_hashes.empty
        else pd.DataFrame(columns=["frame_id", "phash_int"])
    )
    known = links.merge(fh[["frame_id", "phash_int"]], on="frame_id", how="left")
    missing = known["phash_int"].isna()
    if data_dir is not None and missing.any():
        cache: dict[str, int | None] = {}
        for i in np.flatnonzero(missing.to_numpy()):
            p = known.at[i, "path"]
            if not _present(p):
                continue
            if p not in cache:
                f = Path(data_dir) / str(p)
                try:
                    cache[p] = hex_to_int64(hash_image(f).phash) if f.is_file() else None
                except Exception:  # noqa: BLE001 - unreadable media: no hash, the gates report the file
                    cache[p] = None
            known.at[i, "phash_int"] = cache[p]
    known = known.dropna(subset=["phash_int"])
    return pd.DataFrame(
        {"item_id": known["item_id"].astype(str), "phash_int": known["phash_int"].astype(np.int64)}
    ).drop_duplicates()


@dataclass
class ItemLinks:
    """Everything that links items: (item_id, key) memberships and direct pHash pairs."""

    keys: pd.DataFrame  # item_id, kind, key
    hashes: pd.DataFrame  # item_id, phash_int
    phash_threshold: int = 8
    kinds: tuple[str, ...] = KEY_KINDS
    _pairs: pd.DataFrame | None = field(default=None, init=False, repr=False, compare=False)

    def phash_item_pairs(self) -> pd.DataFrame:
        """Item pairs (a < b) that span every pHash link: same components, far fewer pairs.

        Items showing the same image (every question of one clip shares its 32 frames) are
        chained to the first item with that hash, and near hashes are compared once per
        distinct value and linked through those first items. All pairs would be quadratic
        in the items per image; a spanning set gives the same leakage groups, and a
        component that spans two splits always has one of these pairs crossing them, so
        the audit finds every leak (it counts crossing spanning pairs, not all pairs).
        """
        if self._pairs is None:
            self._pairs = self._spanning_pairs()
        return self._pairs

    def _spanning_pairs(self) -> pd.DataFrame:
        cols = ["a", "b", "distance"]
        if "near_duplicate" not in self.kinds or len(self.hashes) < 2:
            return pd.DataFrame(columns=cols)
        h = self.hashes.sort_values(["phash_int", "item_id"]).reset_index(drop=True)
        codes, uniq = pd.factorize(h["phash_int"], sort=True)
        items = h["item_id"].to_numpy(object)
        first = items[np.searchsorted(codes, np.arange(len(uniq)))]  # first item of each distinct hash
        same = pd.DataFrame({"a": first[codes], "b": items, "distance": 0})
        i, j, d = pairs_within(np.asarray(uniq, dtype=np.int64), self.phash_threshold)
        near = pd.DataFrame({"a": first[i], "b": first[j], "distance": d})
        df = pd.concat([same, near], ignore_index=True)
        a, b = df["a"].to_numpy(object), df["b"].to_numpy(object)
        df = pd.DataFrame({"a": np.minimum(a, b), "b": np.maximum(a, b), "distance": df["distance"].to_numpy()})
        df = df[df["a"] != df["b"]]
        return df.sort_values("distance", kind="stable").drop_duplicates(["a", "b"]).reset_index(drop=True)


def build_links(
    items: pd.DataFrame,
    frames: pd.DataFrame | None = None,
    duplicates: pd.DataFrame | None = None,
    frame_hashes: pd.DataFrame | None = None,
    data_dir: Path | None = None,
    kinds: Sequence[str] = KEY_KINDS,
    phash_threshold: int = 8,
) -> ItemLinks:
    unknown = set(kinds) - set(KEY_KINDS)
    if unknown:
        raise ValueError(f"unknown leakage keys {sorted(unknown)}; known: {list(KEY_KINDS)}")
    rows: list[tuple[str, str, str]] = []
    for col in ("source_item_id", "channel"):
        if col in kinds and col in items:
            rows += [(str(i), col, f"{col}:{v}") for i, v in zip(items["item_id"], items[col]) if _present(v)]
    hashes = pd.DataFrame(columns=["item_id", "phash_int"])
    if "near_duplicate" in kinds:
        fl = item_frames(items, frames if frames is not None else pd.DataFrame())
        if duplicates is not None and not duplicates.empty and fl["frame_id"].notna().any():
            g = fl.dropna(subset=["frame_id"]).merge(duplicates[["frame_id", "group_id"]], on="frame_id")
            rows += [(str(i), "near_duplicate", f"dup:{k}") for i, k in zip(g["item_id"], g["group_id"]) if _present(k)]
        hashes = item_hashes(fl, frame_hashes, data_dir)
    keys = pd.DataFrame(rows, columns=["item_id", "kind", "key"]).drop_duplicates()
    return ItemLinks(keys, hashes, phash_threshold, tuple(kinds))


def leakage_groups(item_ids: Sequence[str], links: ItemLinks) -> pd.Series:
    """item_id → group id (``g_`` + the smallest member id), connected components of the links."""
    ids = sorted(set(map(str, item_ids)))
    if not ids:
        return pd.Series(dtype=object)
    idx = {x: k for k, x in enumerate(ids)}
    keys = links.keys[links.keys["item_id"].isin(idx)]
    key_codes, key_idx = (
        np.unique(keys["key"].to_numpy(object), return_inverse=True)
        if len(keys)
        else (np.array([]), np.array([], dtype=np.int64))
    )
    n = len(ids) + len(key_codes)
    ei = [keys["item_id"].map(idx).to_numpy(np.int64)]
    ej = [len(ids) + np.asarray(key_idx, dtype=np.int64)]
    pp = links.phash_item_pairs()
    pp = pp[pp["a"].isin(idx) & pp["b"].isin(idx)]
    ei.append(pp["a"].map(idx).to_numpy(np.int64))
    ej.append(pp["b"].map(idx).to_numpy(np.int64))
    labels = components(n, np.concatenate(ei), np.concatenate(ej))[: len(ids)]
    first: dict[int, str] = {}
    for x, lab in zip(ids, labels):  # ids are sorted: the first seen is the smallest
        first.setdefault(int(lab), x)
    return pd.Series({x: f"g_{first[int(lab)]}" for x, lab in zip(ids, labels)}, name="group_id")


@dataclass
class LeakReport:
    pairs: dict[str, int] = field(default_factory=dict)  # kind → linked item pairs across splits
    examples: list[dict] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.pairs.values())

    @property
    def near_duplicate_pairs(self) -> int:
        return self.pairs.get("near_duplicate", 0) + self.pairs.get("phash", 0)


def cross_split_pairs(assign: pd.DataFrame, links: ItemLinks, max_examples: int = 10) -> LeakReport:
    """Linked item pairs placed in different splits, by link kind (``assign``: item_id, split)."""
    split_of = dict(zip(assign["item_id"].astype(str), assign["split"].astype(str)))
    rep = LeakReport(pairs={k: 0 for k in links.kinds} | ({"phash": 0} if "near_duplicate" in links.kinds else {}))
    keys = links.keys[links.keys["item_id"].isin(split_of)].drop_duplicates(["kind", "key", "item_id"]).copy()
    keys["split"] = keys["item_id"].map(split_of)
    # Per key: pairs across splits = (n² − Σ_split n_s²) / 2, vectorised over all keys.
    per = keys.groupby(["kind", "key", "split"], sort=False).size().rename("c").reset_index()
    per["c2"] = per["c"] ** 2
    agg = per.groupby(["kind", "key"], sort=True).agg(n=("c", "sum"), s2=("c2", "sum"), splits=("split", "size"))
    agg = agg[agg["splits"] > 1]
    if len(agg):
        agg["pairs"] = (agg["n"] ** 2 - agg["s2"]) // 2
        for kind, v in agg.groupby(level="kind")["pairs"].sum().items():
            rep.pairs[kind] += int(v)
        for kind, key in agg.index[:max_examples]:
            g = keys[(keys["kind"] == kind) & (keys["key"] == key)]
            rep.examples.append(
                {
                    "kind": kind,
                    "key": key,
                    "splits": g["split"].value_counts().to_dict(),
                    "items": sorted(g["item_id"].tolist())[:6],
                }
            )
    pp = links.phash_item_pairs()
    if len(pp):
        pp = pp[pp["a"].isin(split_of) & pp["b"].isin(split_of)]
        cross = pp[pp["a"].map(split_of) != pp["b"].map(split_of)]
        rep.pairs["phash"] = len(cross)
        for r in cross.head(max(0, max_examples - len(rep.examples))).itertuples(index=False):
            rep.examples.append(
                {
                    "kind": "phash",
                    "items": [r.a, r.b],
                    "distance": int(r.distance),
                    "splits": {split_of[r.a]: 1, split_of[r.b]: 1},
                }
            )
    return rep


def fill_channels(items: pd.DataFrame, videos: pd.DataFrame | None) -> pd.DataFrame:
    """Items without a ``channel`` take their source video's channel (or uploader)."""
    out = items.copy()
    if "channel" not in out:
        out["channel"] = None
    if videos is None or videos.empty or "video_id" not in videos:
        return out
    v = videos.drop_duplicates("video_id").set_index("video_id")
    ch = v["channel"] if "channel" in v else pd.Series(dtype=object)
    if "uploader" in v:
        ch = ch.where(ch.map(_present), v["uploader"]) if len(ch) else v["uploader"]
    fill = out["source_item_id"].map(ch) if "source_item_id" in out else None
    if fill is not None:
        out["channel"] = out["channel"].where(out["channel"].map(_present), fill)
    return out


def items_by_key(links: ItemLinks, kinds: Iterable[str] | None = None) -> dict[str, list[str]]:
    sub = links.keys if kinds is None else links.keys[links.keys["kind"].isin(list(kinds))]
    return {k: sorted(g["item_id"].tolist()) for k, g in sub.groupby("key")}
