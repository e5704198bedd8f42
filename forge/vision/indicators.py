"""Person indicators (VAGUE §4.1.3): label each detected person ``person1..N`` on the image.

Ordering is deterministic: left to right by the box's left edge, ties (within a few pixels)
broken top to bottom, then by confidence. Labels are drawn with Pillow's built-in scalable
font (``ImageFont.load_default(size=...)``, Pillow >= 10.1), so no font file and no download
is needed; size follows both the box and the image so a label stays legible on a small
person in a large frame without covering a large person's face.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

# Distinct, saturated box colours; text colour chosen per colour for contrast.
PALETTE = [(255, 214, 0), (0, 200, 255), (255, 80, 80), (120, 255, 120), (255, 140, 0), (200, 120, 255)]


@dataclass(frozen=True)
class Box:
    x1: float
    y1: float
    x2: float
    y2: float
    confidence: float = 1.0

    @property
    def w(self) -> float:
        return self.x2 - self.x1

    @property
    def h(self) -> float:
        return self.y2 - self.y1


@dataclass(frozen=True)
class Indicator:
    label: str
    index: int  # 1-based
    box: Box
    label_box: tuple[int, int, int, int]  # x1, y1, x2, y2 of the drawn label background
    font_size: int


def order_boxes(boxes: list[Box], tie_px: float = 4.0) -> list[Box]:
    """Left to right; boxes whose left edges are within ``tie_px`` go top to bottom."""
    return sorted(boxes, key=lambda b: (round(b.x1 / tie_px), b.y1, -b.confidence, b.x2, b.y2))


def font_size_for(box: Box, img_w: int, img_h: int) -> int:
    """About a fifth of the box's smaller side, kept between 1.8 % and 6 % of the image's shorter side."""
    short = min(img_w, img_h)
    lo, hi = max(10, round(0.018 * short)), max(12, round(0.06 * short))
    return int(np.clip(round(0.2 * min(box.w, box.h)), lo, hi))


def _text_colour(bg: tuple[int, int, int]) -> tuple[int, int, int]:
    luminance = 0.299 * bg[0] + 0.587 * bg[1] + 0.114 * bg[2]
    return (0, 0, 0) if luminance > 140 else (255, 255, 255)


def layout_labels(
    boxes: list[Box], img_w: int, img_h: int, prefix: str = "person", presorted: bool = False
) -> list[Indicator]:
    """Where each label goes: just above the box's top-left corner, or inside it when there
    is no room above; always clamped inside the image."""
    out = []
    for i, b in enumerate(boxes if presorted else order_boxes(boxes), start=1):
        label = f"{prefix}{i}"
        size = font_size_for(b, img_w, img_h)
        font = ImageFont.load_default(size=size)
        left, t, r, btm = font.getbbox(label)
        pad = max(2, size // 6)
        tw, th = (r - left) + 2 * pad, (btm - t) + 2 * pad
        tw, th = min(tw, img_w), min(th, img_h)
        x = int(round(b.x1))
        y = int(round(b.y1)) - th
        if y < 0:
            y = int(round(b.y1))
        x = int(np.clip(x, 0, max(0, img_w - tw)))
        y = int(np.clip(y, 0, max(0, img_h - th)))
        out.append(Indicator(label, i, b, (x, y, x + tw, y + th), size))
    return out


def draw_indicators(image: Image.Image, indicators: list[Indicator], scale: float = 1.0) -> Image.Image:
    """A copy of ``image`` (RGB) with each box and its label drawn. ``scale`` maps box
    coordinates (original pixels) onto ``image`` when it was decoded smaller; layouts must
    then be computed on the image's own size (see ``annotate``)."""
    img = image.convert("RGB").copy()
    draw = ImageDraw.Draw(img)
    for ind in indicators:
        colour = PALETTE[(ind.index - 1) % len(PALETTE)]
        b = ind.box
        width = max(2, round(min(img.size) / 300))
        draw.rectangle([b.x1 / scale, b.y1 / scale, b.x2 / scale, b.y2 / scale], outline=colour, width=width)
        x1, y1, x2, y2 = ind.label_box
        draw.rectangle([x1, y1, x2 - 1, y2 - 1], fill=colour)
        font = ImageFont.load_default(size=ind.font_size)
        left, t, _, _ = font.getbbox(ind.label)
        pad = max(2, ind.font_size // 6)
        draw.text((x1 + pad - left, y1 + pad - t), ind.label, font=font, fill=_text_colour(colour))
    return img


def annotate(rgb: np.ndarray, boxes: list[Box], scale: float, out_path: Path, quality: int = 92) -> list[Indicator]:
    """Draw indicators on a decoded frame (``scale`` = original / decoded) and save it.

    Boxes are in original pixels; layout is computed on the decoded image (what is saved),
    and the returned indicators keep the original-pixel boxes for the table.
    """
    h, w = rgb.shape[:2]
    ordered = order_boxes(boxes)  # order in original pixels, so the table and image agree
    small = [Box(b.x1 / scale, b.y1 / scale, b.x2 / scale, b.y2 / scale, b.confidence) for b in ordered]
    laid = layout_labels(small, w, h, presorted=True)
    img = draw_indicators(Image.fromarray(rgb), laid)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f".{out_path.stem}.tmp{out_path.suffix}")
    img.save(tmp, quality=quality)
    tmp.replace(out_path)  # atomic: a reader never sees half an image
    return [Indicator(i.label, i.index, o, i.label_box, i.font_size) for i, o in zip(laid, ordered)]
