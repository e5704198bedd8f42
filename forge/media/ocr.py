"""Text-area ratio of frames (II-Bench stage 2): how much of an image is covered by text.

``ocr_frame`` runs an EasyOCR-compatible reader (anything with
``readtext(image) -> [(polygon, text, confidence), ...]``) on an image shrunk to at most
``max_side`` pixels, scales the polygons back to the original size and measures the
**union** of the polygons rasterised into one mask — overlapping boxes (a word box inside a
line box, two lines whose boxes touch) are counted once. Ratio = text pixels / image pixels.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

import cv2
import numpy as np
import pandas as pd

from forge.media.hashing import open_image
from forge.models.protocols import OCRReader, OCRResult

ClipRule = Literal["any", "all", "mean"]
Polygon = Sequence[Sequence[float]]  # [[x, y], ...] in pixels


def union_area_ratio(polygons: Sequence[Polygon], width: int, height: int, max_side: int = 1024) -> float:
    """Area of the union of ``polygons`` (clipped to the image) / image area.

    The mask is drawn at most ``max_side`` pixels wide (the ratio is scale-free), so huge
    frames cost no more than small ones.
    """
    if width <= 0 or height <= 0:
        raise ValueError("image size must be positive")
    if not polygons:
        return 0.0
    scale = min(1.0, max_side / max(width, height))
    mw, mh = max(1, round(width * scale)), max(1, round(height * scale))
    mask = np.zeros((mh, mw), dtype=np.uint8)
    pts = [
        np.round(np.asarray(p, dtype=np.float64) * scale).astype(np.int32).reshape(-1, 1, 2)
        for p in polygons
        if len(p) >= 3
    ]
    for p in pts:
        # One call per polygon: a single fillPoly over several polygons fills by parity,
        # which would leave the overlap of two boxes empty instead of counting it once.
        cv2.fillPoly(mask, [p], 1)
    return float(mask.sum()) / float(mw * mh)


def load_rgb(path: str | os.PathLike[str]) -> np.ndarray:
    """Decode an image fully to an RGB array (raises on a truncated or non-image file)."""
    with open_image(path) as img:
        img.load()
        return np.asarray(img.convert("RGB"))


def shrink(rgb: np.ndarray, max_side: int) -> tuple[np.ndarray, float]:
    """Downscale so the longer side is ≤ ``max_side``; returns the image and the factor used."""
    h, w = rgb.shape[:2]
    scale = min(1.0, max_side / max(h, w))
    if scale >= 1.0:
        return rgb, 1.0
    small = cv2.resize(rgb, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)
    return small, scale


def ocr_frame(reader: OCRReader, rgb: np.ndarray, max_side: int = 1280, **readtext_kwargs: Any) -> OCRResult:
    """OCR one RGB image; polygons come back in original pixel coordinates."""
    h, w = rgb.shape[:2]
    small, scale = shrink(rgb, max_side)
    found = reader.readtext(small, **readtext_kwargs)
    boxes: list[dict[str, Any]] = []
    polys: list[list[list[float]]] = []
    for poly, text, conf in found:
        pts = [[round(float(x) / scale, 1), round(float(y) / scale, 1)] for x, y in poly]
        polys.append(pts)
        boxes.append({"poly": pts, "text": str(text), "conf": round(float(conf), 4)})
    texts = [b["text"] for b in boxes if b["text"].strip()]
    return OCRResult(
        ratio=union_area_ratio(polys, w, h),
        n_boxes=len(boxes),
        text=" ".join(texts),
        boxes=boxes,
        width=int(w),
        height=int(h),
    )


def clip_passes(ratios: Sequence[float], max_ratio: float, rule: ClipRule) -> bool:
    """Whether a clip passes the text filter, from its frames' ratios.

    ``all``: every frame must be at most ``max_ratio`` (strict: one text-heavy frame, e.g.
    a title card, drops the clip); ``any``: one text-light frame is enough;
    ``mean``: the clip's mean ratio must be at most ``max_ratio``.
    """
    r = np.asarray(ratios, dtype=np.float64)
    if r.size == 0:
        return False
    if rule == "all":
        return bool((r <= max_ratio).all())
    if rule == "any":
        return bool((r <= max_ratio).any())
    if rule == "mean":
        return bool(r.mean() <= max_ratio)
    raise ValueError(f"unknown clip rule {rule!r}")


def spread_clip_frames(frames: pd.DataFrame, per_clip: int) -> pd.DataFrame:
    """At most ``per_clip`` evenly spaced sampled frames of each clip; other frames untouched.

    OCR costs ~0.6 s per frame on a CPU, and a clip's on-screen text and its any/all/mean
    verdict need a handful of its 32 frames, not all of them. ``per_clip <= 0`` keeps all.
    """
    if per_clip <= 0 or frames.empty:
        return frames
    is_clip = (frames["kind"] == "clip_frame") & frames["clip_id"].notna()
    keep = [frames[~is_clip]]
    for _, g in frames[is_clip].sort_values("frame_index").groupby("clip_id", sort=True):
        if len(g) > per_clip:
            idx = np.unique(np.linspace(0, len(g) - 1, per_clip).round().astype(int))
            g = g.iloc[idx]
        keep.append(g)
    return pd.concat(keep).sort_values("frame_id").reset_index(drop=True)
