"""Near-duplicate groups from perceptual hashes (II-Bench stage 1, second half).

Three steps, all vectorised with numpy:

1. **Candidate pairs by multi-index hashing.** The 64 hash bits are cut into ``m``
   blocks. If two hashes differ in at most ``T`` bits, at least one block differs in at
   most ``floor(T/m)`` bits (pigeonhole). Each block is indexed as a direct-address
   table (counting sort over its ``w <= 22``-bit values); every hash probes its own
   block value XOR every mask of ``<= floor(T/m)`` bits, and each hit is a candidate.
   ``m`` is chosen per call to minimise probes + expected candidates. Candidates are
   verified with the full 64-bit Hamming distance (XOR + popcount), so the result is
   exactly the set of pairs within ``T`` — the same as the pairwise loop, without
   its n² cost.
2. **Groups** are the connected components of the pair graph (union-find semantics via
   ``scipy.sparse.csgraph``). Grouping is transitive: a chain a~b~c puts a and c in one
   group even if they are more than ``T`` apart; ``distance`` reports how far each member
   is from the kept frame.
3. **One representative per group** by a deterministic rule: most pixels, then the
   source that comes first in ``source_priority`` (unlisted sources after, alphabetical),
   then the smallest id.

The match rule combines the two hashes: ``either`` (default) accepts a pair when pHash ≤ T
*or* dHash ≤ T_d. The two fail on different edits: a watermark or caption strip moves
pHash by up to 14 bits on a small photo while dHash barely moves; a 2 % crop moves dHash
by up to 8 bits while pHash moves less (measured on the sample photos, see
docs/filters.md), and unrelated photos sit ≥ 27 bits apart in both. ``both`` needs both
hashes within their thresholds (fewer false positives on flat, similar layouts such as
slides), ``phash`` / ``dhash`` use one hash alone.

Clips are compared as sequences (a re-uploaded video): two clips are duplicates when an
order-preserving alignment of their near-duplicate frames (longest common subsequence of
matched frame pairs) covers at least ``clip_min_match`` of the shorter clip. Frames of a
duplicate clip point at their nearest frame in the kept clip.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from forge.media.hashing import HASH_BITS, as_uint64, hamming

Rule = Literal["both", "either", "phash", "dhash"]
MAX_TABLE_BITS = 22  # direct-address table of 4M int32 slots per block at most

# The duplicates table's columns, in contract order.
DUPLICATE_COLUMNS = [
    "frame_id",
    "batch",
    "source",
    "item_id",
    "clip_id",
    "kind",
    "method",
    "group_id",
    "group_size",
    "kept_frame_id",
    "kept_clip_id",
    "is_kept",
    "distance",
    "dhash_distance",
]


@dataclass(frozen=True)
class DedupParams:
    threshold: int = 8  # max pHash Hamming distance (of 64 bits)
    dhash_threshold: int | None = None  # max dHash distance; None = same as threshold
    rule: Rule = "either"
    clip_min_match: float = 0.6  # fraction of the shorter clip's frames that must align
    clip_same_item: bool = False  # also compare clips cut from the same video
    source_priority: tuple[str, ...] = ()

    @property
    def t_dhash(self) -> int:
        return self.threshold if self.dhash_threshold is None else self.dhash_threshold


# -- 1. candidate pairs --------------------------------------------------------------------


@dataclass(frozen=True)
class MihPlan:
    blocks: tuple[tuple[int, int], ...]  # (shift, width) per block
    radius: int  # bits that may differ inside the matching block
    masks: np.ndarray  # all flip masks of popcount <= radius over the widest block


def _flip_masks(width: int, radius: int) -> np.ndarray:
    masks = [0]
    for r in range(1, radius + 1):
        masks += [sum(1 << b for b in bits) for bits in combinations(range(width), r)]
    return np.asarray(masks, dtype=np.int64)


def plan_mih(n: int, threshold: int, max_table_bits: int = MAX_TABLE_BITS) -> MihPlan:
    """Pick the block count that minimises probes + expected random candidates."""
    if threshold < 0:
        raise ValueError("threshold must be >= 0")
    best: tuple[float, int] | None = None
    for m in range(math.ceil(HASH_BITS / max_table_bits), max(threshold + 1, 3) + 1):
        w = math.ceil(HASH_BITS / m)
        r = threshold // m
        probes = sum(math.comb(w, k) for k in range(r + 1))
        cost = n * m * probes + 4.0 * n * n * m * probes / 2.0**w
        if best is None or cost < best[0]:
            best = (cost, m)
    assert best is not None
    m = best[1]
    widths = [HASH_BITS // m + (1 if k < HASH_BITS % m else 0) for k in range(m)]
    shifts = np.cumsum([0] + widths[:-1])
    radius = threshold // m
    return MihPlan(tuple((int(s), int(w)) for s, w in zip(shifts, widths)), radius, _flip_masks(max(widths), radius))


def _expand(
    query: np.ndarray, starts: np.ndarray, counts: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For query item q with hits order[starts[q] : starts[q]+counts[q]] → (q, hit) pairs."""
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    left = np.repeat(query, counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    pos = np.repeat(starts, counts) + (np.arange(total) - first)
    return left, order[pos]


def pairs_within(
    codes: np.ndarray, threshold: int, plan: MihPlan | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All index pairs ``(i, j)``, ``i < j``, whose 64-bit codes differ in ≤ ``threshold`` bits.

    ``codes`` are uint64 (or int64 with the same bits). Returns ``(i, j, distance)``,
    sorted by ``(i, j)``.
    """
    u = as_uint64(codes) if np.asarray(codes).dtype == np.int64 else np.asarray(codes, dtype=np.uint64)
    n = len(u)
    empty = (np.empty(0, np.int64),) * 3
    if n < 2:
        return empty
    plan = plan or plan_mih(n, threshold)
    found: list[np.ndarray] = []
    for shift, width in plan.blocks:
        keys = ((u >> np.uint64(shift)) & np.uint64((1 << width) - 1)).astype(np.int64)
        order = np.argsort(keys, kind="stable").astype(np.int64)
        counts = np.bincount(keys, minlength=1 << width).astype(np.int64)
        starts = np.cumsum(counts) - counts
        # Most probes miss: test them against a 1-byte table (cache-friendly), then
        # gather starts/counts for the hits only.
        occupied = (counts > 0).astype(np.uint8)
        for mask in plan.masks[plan.masks < (1 << width)]:
            q = keys ^ mask
            hit = np.flatnonzero(occupied[q])
            if len(hit) == 0:
                continue
            qh = q[hit]
            a, b = _expand(hit, starts[qh], counts[qh], order)
            keep = a < b  # each unordered pair is seen from both ends; keep one
            a, b = a[keep], b[keep]
            if len(a):
                d = hamming(u[a], u[b])
                ok = d <= threshold
                found.append(a[ok] * n + b[ok])
    if not found:
        return empty
    key = np.unique(np.concatenate(found))  # a pair can match in several blocks
    i, j = key // n, key % n
    return i, j, hamming(u[i], u[j])


def near_duplicate_pairs(phash: np.ndarray, dhash: np.ndarray, params: DedupParams) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(i, j)``, ``i < j``, that match under ``params.rule``."""
    ph, dh = np.asarray(phash, dtype=np.int64), np.asarray(dhash, dtype=np.int64)
    n = len(ph)
    if params.rule in ("both", "phash"):
        i, j, _ = pairs_within(ph, params.threshold)
        if params.rule == "both":
            ok = hamming(dh[i], dh[j]) <= params.t_dhash
            i, j = i[ok], j[ok]
        return i, j
    if params.rule == "dhash":
        i, j, _ = pairs_within(dh, params.t_dhash)
        return i, j
    if params.rule == "either":
        i1, j1, _ = pairs_within(ph, params.threshold)
        i2, j2, _ = pairs_within(dh, params.t_dhash)
        key = np.unique(np.concatenate([i1 * n + j1, i2 * n + j2]))
        return key // n, key % n
    raise ValueError(f"unknown rule {params.rule!r}")


# -- 2. groups and 3. representatives --------------------------------------------------------


def components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Connected-component label of each of ``n`` items under the pair edges."""
    if n == 0:
        return np.empty(0, np.int64)
    graph = coo_matrix((np.ones(len(i), dtype=np.int8), (i, j)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    return labels.astype(np.int64)


def source_ranks(sources: Sequence[str], priority: Sequence[str]) -> np.ndarray:
    """Rank of each source: listed ones by list position, then the rest alphabetically."""
    listed = {s: k for k, s in enumerate(priority)}
    rest = sorted(set(sources) - set(listed))
    rank = {**listed, **{s: len(listed) + k for k, s in enumerate(rest)}}
    return np.asarray([rank[s] for s in sources], dtype=np.int64)


def representatives(labels: np.ndarray, pixels: np.ndarray, src_rank: np.ndarray, ids: Sequence[str]) -> np.ndarray:
    """Index of the kept member of each item's group: most pixels, first source, smallest id."""
    n = len(labels)
    if n == 0:
        return np.empty(0, np.int64)
    id_rank = np.argsort(np.argsort(np.asarray(ids, dtype=object), kind="stable"), kind="stable")
    order = np.lexsort((id_rank, src_rank, -np.asarray(pixels, dtype=np.int64), labels))
    first = np.ones(n, dtype=bool)
    first[1:] = labels[order][1:] != labels[order][:-1]
    kept_of_label = np.empty(labels.max() + 1, dtype=np.int64)
    kept_of_label[labels[order][first]] = order[first]
    return kept_of_label[labels]


# -- clips -----------------------------------------------------------------------------------


def aligned_matches(a_idx: Sequence[int], b_idx: Sequence[int]) -> int:
    """Longest chain of matched frame pairs increasing in both clips (order-preserving)."""
    pairs = sorted(zip(a_idx, b_idx), key=lambda p: (p[0], -p[1]))
    tails: list[int] = []
    for _, b in pairs:  # LIS on b, strictly increasing; (a asc, b desc) forbids reusing an a
        k = bisect.bisect_left(tails, b)
        if k == len(tails):
            tails.append(b)
        else:
            tails[k] = b
    return len(tails)


def clip_duplicate_pairs(
    clip_of: np.ndarray,
    pos_in_clip: np.ndarray,
    clip_len: np.ndarray,
    clip_item: np.ndarray,
    fi: np.ndarray,
    fj: np.ndarray,
    params: DedupParams,
) -> list[tuple[int, int, float]]:
    """Clip pairs whose frame sequences align; ``(clip_a, clip_b, score)`` with a < b.

    ``fi, fj`` are near-duplicate frame pairs (indices into the clip-frame arrays),
    ``clip_of`` the clip index of each frame and ``pos_in_clip`` its order in the clip.
    """
    ca, cb = clip_of[fi], clip_of[fj]
    keep = ca != cb
    if not params.clip_same_item:
        keep &= clip_item[ca] != clip_item[cb]
    fi, fj, ca, cb = fi[keep], fj[keep], ca[keep], cb[keep]
    swap = ca > cb
    fi, fj = np.where(swap, fj, fi), np.where(swap, fi, fj)
    ca, cb = np.minimum(ca, cb), np.maximum(ca, cb)
    if len(ca) == 0:
        return []
    df = pd.DataFrame({"ca": ca, "cb": cb, "pa": pos_in_clip[fi], "pb": pos_in_clip[fj]})
    need = params.clip_min_match * np.minimum(clip_len[df["ca"]], clip_len[df["cb"]])
    df["need"] = need
    # Cheap bound first: the alignment can't be longer than the distinct frames matched.
    distinct = df.groupby(["ca", "cb"]).agg(na=("pa", "nunique"), nb=("pb", "nunique"), need=("need", "first"))
    cand = distinct[(distinct[["na", "nb"]].min(axis=1) >= distinct["need"])].index
    out: list[tuple[int, int, float]] = []
    if len(cand) == 0:
        return out
    sub = df.set_index(["ca", "cb"]).loc[cand]
    for (a, b), g in sub.groupby(level=[0, 1], sort=True):
        score = aligned_matches(g["pa"].tolist(), g["pb"].tolist()) / min(clip_len[a], clip_len[b])
        if score >= params.clip_min_match:
            out.append((int(a), int(b), float(score)))
    return out


# -- the table --------------------------------------------------------------------------------


def find_duplicates(hashes: pd.DataFrame, params: DedupParams = DedupParams()) -> pd.DataFrame:
    """The ``duplicates`` table: one row per hashed frame (see data_contracts/duplicates.yaml).

    ``hashes`` needs: frame_id, batch, source, item_id, clip_id, kind, frame_index, width,
    height, phash_int, dhash_int. Images and pool frames are grouped frame by frame
    (``method = frame``); frames sampled from clips are grouped clip by clip
    (``method = clip``) so a kept clip keeps its whole frame sequence.
    """
    if hashes.empty:
        return pd.DataFrame(columns=DUPLICATE_COLUMNS)
    h = hashes.sort_values("frame_id", kind="stable").reset_index(drop=True)
    is_clip = (h["kind"] == "clip_frame") & h["clip_id"].notna()
    parts = [
        _frame_groups(h[~is_clip].reset_index(drop=True), params),
        _clip_groups(h[is_clip].reset_index(drop=True), params),
    ]
    out = pd.concat([p for p in parts if not p.empty], ignore_index=True)
    return out[DUPLICATE_COLUMNS].sort_values("frame_id", kind="stable").reset_index(drop=True)


def _frame_groups(h: pd.DataFrame, params: DedupParams) -> pd.DataFrame:
    if h.empty:
        return pd.DataFrame(columns=DUPLICATE_COLUMNS)
    ph, dh = h["phash_int"].to_numpy(np.int64), h["dhash_int"].to_numpy(np.int64)
    i, j = near_duplicate_pairs(ph, dh, params)
    labels = components(len(h), i, j)
    pixels = (h["width"].astype(np.int64) * h["height"].astype(np.int64)).to_numpy()
    kept = representatives(
        labels, pixels, source_ranks(h["source"].tolist(), params.source_priority), h["frame_id"].tolist()
    )
    ids = h["frame_id"].to_numpy(object)
    size = np.bincount(labels)[labels]
    return pd.DataFrame(
        {
            "frame_id": ids,
            "batch": h["batch"],
            "source": h["source"],
            "item_id": h["item_id"],
            "clip_id": h["clip_id"],
            "kind": h["kind"],
            "method": "frame",
            "group_id": ids[kept],
            "group_size": size,
            "kept_frame_id": ids[kept],
            "kept_clip_id": None,
            "is_kept": kept == np.arange(len(h)),
            "distance": hamming(ph, ph[kept]),
            "dhash_distance": hamming(dh, dh[kept]),
        }
    )


def _clip_groups(h: pd.DataFrame, params: DedupParams) -> pd.DataFrame:
    if h.empty:
        return pd.DataFrame(columns=DUPLICATE_COLUMNS)
    h = h.sort_values(["clip_id", "frame_index", "frame_id"], kind="stable").reset_index(drop=True)
    ph, dh = h["phash_int"].to_numpy(np.int64), h["dhash_int"].to_numpy(np.int64)
    clip_codes, clip_of = np.unique(h["clip_id"].to_numpy(object), return_inverse=True)
    clip_of = clip_of.astype(np.int64)
    n_clips = len(clip_codes)
    clip_len = np.bincount(clip_of, minlength=n_clips)
    pos_in_clip = h.groupby("clip_id", sort=False).cumcount().to_numpy(np.int64)
    first_row = np.searchsorted(clip_of, np.arange(n_clips))  # rows are sorted by clip
    clip_item = pd.factorize(h["item_id"])[0][first_row]
    pixels = (h["width"].astype(np.int64) * h["height"].astype(np.int64)).to_numpy()
    clip_pixels = np.maximum.reduceat(pixels, first_row)
    clip_source = h["source"].to_numpy(object)[first_row]

    fi, fj = near_duplicate_pairs(ph, dh, params)
    cpairs = clip_duplicate_pairs(clip_of, pos_in_clip, clip_len, clip_item, fi, fj, params)
    ca = np.asarray([p[0] for p in cpairs], dtype=np.int64)
    cb = np.asarray([p[1] for p in cpairs], dtype=np.int64)
    labels = components(n_clips, ca, cb)
    kept_clip = representatives(
        labels, clip_pixels, source_ranks(list(clip_source), params.source_priority), list(clip_codes)
    )
    clip_size = np.bincount(labels)[labels]

    ids = h["frame_id"].to_numpy(object)
    kept_frame = np.arange(len(h))
    for c in np.flatnonzero(kept_clip != np.arange(n_clips)):
        # Each frame of a duplicate clip points at its nearest frame of the kept clip.
        mine = np.arange(first_row[c], first_row[c] + clip_len[c])
        k = kept_clip[c]
        theirs = np.arange(first_row[k], first_row[k] + clip_len[k])
        d = hamming(ph[mine][:, None], ph[theirs][None, :])
        kept_frame[mine] = theirs[np.argmin(d, axis=1)]
    fr_kept_clip = kept_clip[clip_of]
    return pd.DataFrame(
        {
            "frame_id": ids,
            "batch": h["batch"],
            "source": h["source"],
            "item_id": h["item_id"],
            "clip_id": h["clip_id"],
            "kind": h["kind"],
            "method": "clip",
            "group_id": clip_codes[fr_kept_clip],
            "group_size": clip_size[clip_of],
            "kept_frame_id": ids[kept_frame],
            "kept_clip_id": clip_codes[fr_kept_clip],
            "is_kept": fr_kept_clip == clip_of,
            "distance": hamming(ph, ph[kept_frame]),
            "dhash_distance": hamming(dh, dh[kept_frame]),
        }
    )
