"""Perceptual hashes of frames (II-Bench stage 1, first half): pHash and dHash, 64 bits each.

Hashes are kept two ways: as the usual 16-digit hex string (what ``imagehash`` prints,
readable and comparable with other tools) and as the same 64 bits in a signed int64
(``uint64`` bit pattern viewed as ``int64``), so numpy and DuckDB can XOR and popcount
whole columns at once (``bit_count(xor(a.phash_int, b.phash_int))``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import imagehash
import numpy as np
from PIL import Image

from forge.storage.objects import localize

HASH_BITS = 64
# pHash looks at a 32x32 DCT, dHash at 9x8 pixels: decoding a JPEG at 1/2..1/8 scale
# (PIL "draft") loses nothing they can see and makes hashing several times faster.
DRAFT_SIDE = 256


@dataclass(frozen=True)
class FrameHash:
    phash: str  # 16 hex digits
    dhash: str
    width: int
    height: int

    @property
    def phash_int(self) -> int:
        return hex_to_int64(self.phash)

    @property
    def dhash_int(self) -> int:
        return hex_to_int64(self.dhash)


def hex_to_int64(h: str) -> int:
    """The 64 hash bits as a signed int64 (two's complement of the unsigned value)."""
    u = int(h, 16)
    if not 0 <= u < 1 << 64:
        raise ValueError(f"not a 64-bit hash: {h!r}")
    return u - (1 << 64) if u >= 1 << 63 else u


def int64_to_hex(v: int) -> str:
    return f"{v & ((1 << 64) - 1):016x}"


def as_uint64(values: Iterable[int] | np.ndarray) -> np.ndarray:
    """int64 hash column → uint64 array with the same bits (no copy when possible)."""
    return np.asarray(values, dtype=np.int64).view(np.uint64)


def popcount64(x: np.ndarray) -> np.ndarray:
    """Number of set bits of each uint64 (vectorised; numpy>=2 has bitwise_count)."""
    x = np.asarray(x, dtype=np.uint64)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    # SWAR popcount for older numpy
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return ((x * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)


def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise Hamming distance between two uint64 (or int64) hash arrays."""
    a = np.asarray(a).view(np.uint64) if np.asarray(a).dtype == np.int64 else np.asarray(a, dtype=np.uint64)
    b = np.asarray(b).view(np.uint64) if np.asarray(b).dtype == np.int64 else np.asarray(b, dtype=np.uint64)
    return popcount64(a ^ b)


def open_image(path: str | os.PathLike[str] | BinaryIO) -> Image.Image:
    """``PIL.Image.open`` without Ultralytics' monkey-patch.

    Importing ``ultralytics`` (the vision stage, same code location) replaces
    ``Image.open`` with a wrapper that, on a non-image file, tries to pip-install a HEIF
    plugin and then raises ``ModuleNotFoundError`` offline — a misleading reject class.
    """
    patches = sys.modules.get("ultralytics.utils.patches")
    opener = getattr(patches, "_image_open", None) or Image.open
    return opener(path)


def hash_pil(img: Image.Image) -> tuple[str, str]:
    """(pHash, dHash) hex strings of a decoded image."""
    grey = img.convert("L")
    return str(imagehash.phash(grey, hash_size=8)), str(imagehash.dhash(grey, hash_size=8))


def hash_image(path: str | os.PathLike[str]) -> FrameHash:
    """Decode ``path`` fully (a truncated file raises here) and hash it.

    Raises the decoder's exception (``OSError``, ``PIL.UnidentifiedImageError``,
    ``ValueError``...) for a file that is not a readable image; callers turn it into a
    reject row.
    """
    with open_image(path) as img:
        width, height = img.size
        if img.format == "JPEG":
            img.draft("L", (DRAFT_SIDE, DRAFT_SIDE))
        img.load()
        p, d = hash_pil(img)
    return FrameHash(phash=p, dhash=d, width=int(width), height=int(height))


def hash_many(
    paths: list[Path],
    workers: int = 2,
    on_done: Callable[[int], None] | None = None,
) -> list[FrameHash | BaseException]:
    """Hash many files; each result is a ``FrameHash`` or the exception that file raised.

    Threads help because PIL's decoders and scipy's DCT release the GIL.
    """

    def one(p: Path) -> FrameHash | BaseException:
        try:
            return hash_image(p)
        except Exception as exc:  # noqa: BLE001 - any decode failure is a per-item reject
            return exc

    out: list[FrameHash | BaseException] = []
    if workers <= 1:
        for p in paths:
            out.append(one(p))
            if on_done:
                on_done(1)
        return out
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for r in pool.map(one, paths):
            out.append(r)
            if on_done:
                on_done(1)
    return out


def hash_stored(
    location: str, keys: list[str], workers: int = 2, on_done: Callable[[int], None] | None = None
) -> list[FrameHash | BaseException]:
    """``hash_many`` of stored paths (``keys``) under ``location`` (what
    ``forge.storage.location.location_of`` hands a worker): on object storage the objects this
    node lacks are fetched into its own work dir first, so no path is shared between nodes; a key
    with no object is that frame's ``FileNotFoundError``, as on a local disk."""
    root = localize(location, keys)
    return hash_many([root / k for k in keys], workers, on_done)


def hash_paths(
    location: str,
    keys: list[str],
    workers: int = 2,
    on_done: Callable[[int], None] | None = None,
    placement: Any = None,
) -> list[FrameHash | BaseException]:
    """``hash_stored`` here, or on Ray tasks of ``shard_frames`` keys each when ``placement``
    (default: config's ``scale.stages.frame_hashes``) names a cluster; results in key order either way."""
    from forge.scale.ray_pool import configured_placement, map_calls, shards_of

    placement = placement if placement is not None else configured_placement("frame_hashes")
    if not placement.enabled:
        return hash_stored(location, keys, workers, on_done)
    out: list[FrameHash | BaseException] = []
    shards = shards_of(keys, placement.shard_frames)
    for shard, part in zip(shards, map_calls(placement, hash_stored, [(location, s, workers) for s in shards])):
        out += part
        if on_done:
            on_done(len(shard))
    return out
