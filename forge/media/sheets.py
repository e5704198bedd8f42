"""What each stage's contact sheet shows: rows of its table turned into tiles.

Paths in the tables are relative to the data dir. A missing or unreadable file is a grey
tile (the sheet is a view, never a reason to fail a stage); a video is shown as a strip of
a few frames.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image

from forge.media.contact_sheet import MAX_TILES, Shape, Tile, strip

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff"}
STRIP_FRAMES = 3


def _open(path: Path) -> Image.Image | None:
    try:
        with Image.open(path) as im:
            im.load()
            return im.convert("RGB")
    except (OSError, ValueError):
        return None


def load_media(data_dir: Path, rel: str | None, frames: int = STRIP_FRAMES) -> list[Image.Image]:
    """An image, or ``frames`` frames spread over a video; [] when it cannot be read."""
    if not rel:
        return []
    path = Path(rel) if Path(rel).is_absolute() else data_dir / rel
    if path.suffix.lower() in IMAGE_SUFFIXES:
        im = _open(path)
        return [im] if im is not None else []
    try:
        import av

        from forge.media.frames import sample_at

        with av.open(str(path)) as c:
            vs = c.streams.video[0]
            dur = float(vs.duration * vs.time_base) if vs.duration else float(c.duration or 0) / 1e6
        times = [dur * (i + 0.5) / frames for i in range(frames)] if dur > 0 else [0.0]
        return [Image.fromarray(s.image) for s in sample_at(path, times)]
    except Exception:  # noqa: BLE001 — an unreadable clip is a grey tile, not a failed stage
        return []


def spread(df: pd.DataFrame, n: int = MAX_TILES) -> pd.DataFrame:
    """Up to ``n`` rows spread evenly over ``df`` (so a sheet is not the first item's frames)."""
    if len(df) <= n:
        return df
    step = len(df) / n
    return df.iloc[[int(i * step) for i in range(n)]]


def frame_tiles(frames: pd.DataFrame, data_dir: Path, n: int = MAX_TILES) -> list[Tile]:
    return [
        Tile(
            images=load_media(data_dir, r.path),
            caption=f"{r.item_id}\n{r.kind}"
            + (f" @ {r.timestamp_s:.1f}s" if pd.notna(r.timestamp_s) else "")
            + f" · {r.width}x{r.height}",
        )
        for r in spread(frames, n).itertuples(index=False)
    ]


def ocr_shapes(boxes: Any) -> list[Shape]:
    """text_ratio's ``boxes`` json ([{poly: [[x, y] × 4], text, conf}]) as labelled polygons."""
    if isinstance(boxes, str):
        boxes = json.loads(boxes or "[]")
    return [Shape(points=[tuple(p) for p in b["poly"]], label=str(b.get("text") or "")[:20]) for b in boxes or []]


def ocr_tiles(text_ratio: pd.DataFrame, frames: pd.DataFrame, data_dir: Path, n: int = MAX_TILES) -> list[Tile]:
    """Frames with their OCR boxes drawn, the most text first (the filter's hardest calls)."""
    if text_ratio.empty:
        return []
    paths = dict(zip(frames["frame_id"], frames["path"], strict=True)) if len(frames) else {}
    rows = text_ratio.sort_values(["ratio", "frame_id"], ascending=[False, True]).head(n)
    return [
        Tile(
            images=load_media(data_dir, paths.get(r.frame_id)),
            shapes=ocr_shapes(r.boxes),
            caption=f"{r.ratio:.1%} text · {'kept' if r.passes else 'text-heavy'}\n{r.text or ''}",
        )
        for r in rows.itertuples(index=False)
    ]


def indicator_tiles(indicators: pd.DataFrame, data_dir: Path, n: int = MAX_TILES) -> list[Tile]:
    """The annotated copies (tags already drawn, as VLM prompts see them), one per frame."""
    if indicators.empty:
        return []
    tiles = []
    for frame_id, g in list(indicators.groupby("frame_id", sort=True))[:n]:
        labels = ", ".join(f"{r.label} {r.confidence:.2f}" for r in g.itertuples(index=False))
        tiles.append(Tile(images=load_media(data_dir, g["annotated_path"].iat[0]), caption=f"{frame_id}\n{labels}"))
    return tiles


def _listed(v: Any) -> list[Any]:
    return [] if v is None or (isinstance(v, float) and pd.isna(v)) else list(v)


def item_caption(question: str, options: Iterable[Any], answer: Any) -> str:
    opts = [str(o) for o in options]
    lines = [str(question)]
    for i, o in enumerate(opts):
        letter = chr(ord("A") + i)
        mark = "*" if str(answer) in (o, letter, str(i)) else " "
        lines.append(f"{mark}{letter}. {o}")
    return "\n".join(lines)


def item_tiles(items: pd.DataFrame, data_dir: Path, n: int = MAX_TILES) -> list[Tile]:
    """Benchmark items: the image (or a frame strip of the clip) with the question and options
    (the answer starred)."""
    tiles = []
    for r in spread(items, n).itertuples(index=False):
        images = [im for p in _listed(r.media_paths)[:STRIP_FRAMES] for im in load_media(data_dir, p)]
        joined = strip(images[:STRIP_FRAMES], height=max(im.height for im in images)) if len(images) > 1 else None
        tiles.append(
            Tile(
                images=[joined] if joined else images[:1],
                caption=item_caption(r.question, _listed(r.options), r.answer),
            )
        )
    return tiles
