"""A contact sheet: a few thumbnails with captions (and drawn shapes) in one small PNG.

Dagster has no image metadata type, but its UI renders Markdown images with ``data:`` URIs,
so a stage shows what it made as ``![…](data:image/png;base64,…)``. The sheet is kept small
(at most ``max_tiles`` thumbnails, shrunk until the PNG fits ``max_bytes``) because every
materialization event stores it. PIL only; what to show is decided by forge/media/sheets.py.
"""

from __future__ import annotations

import base64
import io
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

from PIL import Image, ImageDraw, ImageFont

MAX_TILES = 12
MAX_BYTES = 150_000
BG, FG, MISSING = (255, 255, 255), (20, 20, 20), (200, 200, 200)
PALETTE = [(230, 25, 75), (60, 180, 75), (0, 130, 200), (245, 130, 48), (145, 30, 180), (70, 240, 240)]


@dataclass(frozen=True)
class Shape:
    """A polygon (two points = a rectangle) in the source image's pixels, with a label."""

    points: Sequence[tuple[float, float]]
    label: str = ""


@dataclass(frozen=True)
class Tile:
    """One thumbnail: its images side by side (a frame strip), shapes on the first, a caption."""

    images: Sequence[Image.Image] = ()
    caption: str = ""
    shapes: Sequence[Shape] = field(default_factory=tuple)


def strip(images: Sequence[Image.Image], height: int = 160) -> Image.Image | None:
    """Images scaled to one height, side by side (a video's frames in a row)."""
    if not images:
        return None
    scaled = [im.convert("RGB").resize((max(1, round(im.width * height / im.height)), height)) for im in images]
    out = Image.new("RGB", (sum(s.width for s in scaled) + 2 * (len(scaled) - 1), height), BG)
    x = 0
    for s in scaled:
        out.paste(s, (x, 0))
        x += s.width + 2
    return out


def _draw_shapes(im: Image.Image, shapes: Sequence[Shape]) -> Image.Image:
    im = im.convert("RGB")
    draw = ImageDraw.Draw(im)
    width = max(2, round(max(im.size) / 200))
    for i, s in enumerate(shapes):
        colour = PALETTE[i % len(PALETTE)]
        pts = [(float(x), float(y)) for x, y in s.points]
        if len(pts) == 2:
            (x0, y0), (x1, y1) = pts
            pts = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
        if len(pts) < 3:
            continue
        draw.line([*pts, pts[0]], fill=colour, width=width)
        if s.label:
            x, y = min(p[0] for p in pts), min(p[1] for p in pts)
            font = _font(max(10, round(max(im.size) / 16)))  # still legible once thumbnailed
            box = draw.textbbox((x, y), s.label, font=font)
            draw.rectangle(box, fill=colour)
            draw.text((x, y), s.label, fill=BG, font=font)
    return im


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has one bitmap size
        return ImageFont.load_default()


def _thumb(tile: Tile, side: int) -> Image.Image:
    if not tile.images:
        return Image.new("RGB", (side, side * 3 // 4), MISSING)
    first = _draw_shapes(tile.images[0], tile.shapes) if tile.shapes else tile.images[0]
    im = strip([first, *tile.images[1:]], height=max(im.height for im in tile.images)) or first
    im = im.convert("RGB")
    im.thumbnail((side, side))
    return im


def render(
    tiles: Sequence[Tile], thumb: int = 160, columns: int = 4, caption_lines: int = 4, max_tiles: int = MAX_TILES
) -> Image.Image | None:
    """The sheet as an image (None for no tiles): a grid of thumbnails with wrapped captions."""
    tiles = list(tiles)[:max_tiles]
    if not tiles:
        return None
    font = _font(11)
    line_h, pad = 13, 6
    chars = max(8, thumb // 6)
    captions = []
    for t in tiles:
        lines = [w for para in t.caption.splitlines() for w in (textwrap.wrap(para, chars) or [""])]
        if len(lines) > caption_lines:
            lines = [*lines[: caption_lines - 1], lines[caption_lines - 1][: chars - 1] + "…"]
        captions.append(lines)
    cols = min(columns, len(tiles))
    rows = -(-len(tiles) // cols)
    cell_w, cell_h = thumb + pad, thumb + pad + line_h * caption_lines + pad
    sheet = Image.new("RGB", (cols * cell_w + pad, rows * cell_h + pad), BG)
    draw = ImageDraw.Draw(sheet)
    for i, (t, lines) in enumerate(zip(tiles, captions, strict=True)):
        x, y = pad + (i % cols) * cell_w, pad + (i // cols) * cell_h
        im = _thumb(t, thumb)
        sheet.paste(im, (x + (thumb - im.width) // 2, y + (thumb - im.height) // 2))
        for j, line in enumerate(lines):
            draw.text((x, y + thumb + pad // 2 + j * line_h), line, fill=FG, font=font)
    return sheet


def png_bytes(tiles: Sequence[Tile], max_bytes: int = MAX_BYTES, thumb: int = 160, **kw) -> bytes | None:
    """The sheet as PNG, its thumbnails shrunk (and colours reduced) until it fits ``max_bytes``."""
    while True:
        sheet = render(tiles, thumb=thumb, **kw)
        if sheet is None:
            return None
        buf = io.BytesIO()
        sheet.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(buf, format="PNG", optimize=True)
        if buf.tell() <= max_bytes or thumb <= 48:
            return buf.getvalue()
        thumb = int(thumb * 0.8)


def markdown(tiles: Sequence[Tile], alt: str = "contact sheet", max_bytes: int = MAX_BYTES, **kw) -> str:
    """Markdown showing the sheet inline (a ``data:`` URI), or a line saying there is nothing."""
    png = png_bytes(tiles, max_bytes=max_bytes, **kw)
    if png is None:
        return "_no pictures_"
    return f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode()})"
