"""Per-batch drivers: decode (prefetched) -> model in batches -> rows + rejects.

No Dagster here: assets pass in the frames, a loaded model and a ``reject`` callback.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from forge.models.protocols import Detector, ShardedDetector, StreamingDetector, Tagger
from forge.storage.location import location_of
from forge.storage.objects import localize
from forge.vision.detector import DETECTION_COLUMNS, detection_rows
from forge.vision.fast_detect import actual_setup
from forge.vision.images import EncodedJPEG, LoadedImage, LoadError, batched, load_image, prefetch, read_for_device
from forge.vision.indicators import Box, annotate

Reject = Callable[[str, str, str, str], None]  # frame_id, reason, error_class, detail


@dataclass
class DecodeOptions:
    max_side: int = 1920
    min_side: int = 8
    max_pixels: int = 400_000_000
    workers: int = 4
    ahead: int = 64

    def load_kwargs(self) -> dict:
        return {"max_side": self.max_side, "min_side": self.min_side, "max_pixels": self.max_pixels}


@dataclass
class StageStats:
    frames: int = 0
    processed: int = 0
    rejected: int = 0
    model_seconds: float = 0.0
    wall_seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def fps(self) -> float:
        return self.processed / self.wall_seconds if self.wall_seconds else 0.0


def select_kept(frames: pd.DataFrame, duplicates: pd.DataFrame) -> pd.DataFrame:
    """Frames vision should look at: not marked as a dropped duplicate (absent = kept)."""
    if duplicates.empty or "is_kept" not in duplicates:
        return frames
    dropped = set(duplicates.loc[~duplicates["is_kept"].astype(bool), "frame_id"])
    return frames[~frames["frame_id"].isin(dropped)]


def run_detection(
    frames: pd.DataFrame,
    data_dir: Path,
    detector: Detector | ShardedDetector,
    reject: Reject,
    opts: DecodeOptions,
    progress: Callable[[int], None] | None = None,
) -> tuple[pd.DataFrame, StageStats]:
    """``frames``: frame_id, batch, path. Returns the detections rows of this batch."""
    if isinstance(detector, ShardedDetector):  # forge.vision.detect_worker.RemoteDetector: shards on Ray
        return detector.run_remote(frames, data_dir, reject, opts, progress)
    data_dir = localize(location_of(data_dir), list(frames["path"]))  # frames another node made: fetched
    streaming = detector if isinstance(detector, StreamingDetector) else None
    stats, rows = StageStats(frames=len(frames)), []
    t0 = time.perf_counter()
    items = [((r.frame_id, r.batch), data_dir / r.path) for r in frames.itertuples(index=False)]
    # Resize to the model's input size in the decode threads: Ultralytics would letterbox to
    # imgsz anyway (same aspect), but on the main thread, between GPU batches.
    kwargs = {**opts.load_kwargs(), "max_side": min(opts.max_side, detector.imgsz)}
    # With device decoding (the tensor engine on CUDA) the threads only read plain JPEGs' bytes.
    loader = read_for_device if streaming is not None and streaming.device_decode else load_image
    ahead = max(opts.ahead, detector.batch_size * 2)
    loaded = prefetch(items, workers=opts.workers, ahead=ahead, loader=loader, **kwargs)

    def good_chunks():
        for chunk in batched(loaded, detector.batch_size):
            good: list[tuple[tuple[str, str], LoadedImage | EncodedJPEG]] = []
            for p in chunk:
                if isinstance(p.result, LoadError):
                    reject(p.key[0], p.result.reason, p.result.error_class, p.result.detail)
                    stats.rejected += 1
                else:
                    good.append((p.key, p.result))
            yield (good, len(chunk)), [im for _, im in good]

    # The tensor engine (forge.vision.fast_detect) overlaps the next batch's upload with this
    # batch's forward pass; the library engine runs one batch after the other.
    stream = (
        streaming.detect_stream
        if streaming is not None
        else (lambda chunks: (((tag, detector.detect(ims) if ims else [])) for tag, ims in chunks))
    )
    before = dict(streaming.phase_seconds) if streaming is not None else {}
    tm, rows_s = time.perf_counter(), 0.0
    for (good, n), dets in stream(good_chunks()):
        tr = time.perf_counter()
        for ((fid, batch), im), d in zip(good, dets):
            if isinstance(d, LoadError):  # a JPEG that neither the device nor the CPU could decode
                reject(fid, d.reason, d.error_class, d.detail)
                stats.rejected += 1
                continue
            rows += detection_rows(fid, batch, d, im.orig_width, im.orig_height, detector.spec)
            stats.processed += 1
        rows_s += time.perf_counter() - tr
        if progress:
            progress(n)
    stats.model_seconds = time.perf_counter() - tm  # model + waiting on decode (decode is prefetched)
    stats.wall_seconds = time.perf_counter() - t0
    stats.extra["phase_seconds"] = phase_breakdown(
        before, streaming.phase_seconds if streaming is not None else None, stats.model_seconds, rows_s
    )
    stats.extra["setup"] = actual_setup(detector)  # what produced these rows (engine, device, ...)
    return pd.DataFrame(rows, columns=DETECTION_COLUMNS), stats


def phase_breakdown(
    before: dict[str, float], after: dict[str, float] | None, main_s: float, rows_s: float
) -> dict[str, float]:
    """Where the detection stage's time went, in seconds: the detector's own phases over this
    call (``forge.vision.fast_detect.PHASES``; decode and letterbox run in threads of their own)
    plus, on the main thread, building ``rows`` and ``waiting`` for the next prepared batch. A
    large ``waiting`` means preparation (decode, letterbox) bounds the stage, not the network.
    Without phases (the library's predict) the rest of the main thread is ``model_and_waiting``."""
    out = {k: round(v - before.get(k, 0.0), 4) for k, v in (after or {}).items()}
    rest = main_s - rows_s - out.get("network", 0.0) - out.get("boxes", 0.0)
    out |= {"rows": round(rows_s, 4), ("waiting" if after else "model_and_waiting"): round(max(rest, 0.0), 4)}
    return out


def add_phases(total: dict[str, float], part: dict[str, float]) -> dict[str, float]:
    """``part``'s phase seconds added into ``total`` (partitions of a run, Ray replicas)."""
    for k, v in part.items():
        total[k] = round(total.get(k, 0.0) + v, 4)
    return total


def run_indicators(
    frames: pd.DataFrame,
    detections: pd.DataFrame,
    data_dir: Path,
    out_dir: Path,
    reject: Reject,
    opts: DecodeOptions,
    person_class: str = "person",
) -> pd.DataFrame:
    """Annotated copies for frames with people; ``out_dir`` is inside ``data_dir``."""
    persons = detections[detections["class_name"] == person_class]
    if persons.empty:
        return pd.DataFrame(columns=INDICATOR_COLUMNS)
    paths = dict(zip(frames["frame_id"], frames["path"]))
    by_frame = {f: g for f, g in persons.groupby("frame_id", sort=True) if f in paths}
    rows = []
    items = [(f, data_dir / paths[f]) for f in by_frame]
    for p in prefetch(items, workers=opts.workers, ahead=opts.ahead, **opts.load_kwargs()):
        if isinstance(p.result, LoadError):
            reject(p.key, p.result.reason, p.result.error_class, p.result.detail)
            continue
        im, g = p.result, by_frame[p.key]
        boxes = [Box(r.x1, r.y1, r.x2, r.y2, r.confidence) for r in g.itertuples(index=False)]
        out = out_dir / f"{p.key}.jpg"
        inds = annotate(im.rgb, boxes, im.scale, out)
        rel = str(out.relative_to(data_dir))
        batch = g["batch"].iloc[0]
        for ind in inds:
            b = ind.box
            rows.append(
                {
                    "frame_id": p.key,
                    "batch": batch,
                    "label": ind.label,
                    "person_index": ind.index,
                    "x1": b.x1,
                    "y1": b.y1,
                    "x2": b.x2,
                    "y2": b.y2,
                    "nx1": b.x1 / im.orig_width,
                    "ny1": b.y1 / im.orig_height,
                    "nx2": b.x2 / im.orig_width,
                    "ny2": b.y2 / im.orig_height,
                    "confidence": b.confidence,
                    "font_size": ind.font_size,
                    "annotated_path": rel,
                    "annotated_width": im.rgb.shape[1],
                    "annotated_height": im.rgb.shape[0],
                }
            )
    return pd.DataFrame(rows, columns=INDICATOR_COLUMNS)


INDICATOR_COLUMNS = [
    "frame_id",
    "batch",
    "label",
    "person_index",
    "x1",
    "y1",
    "x2",
    "y2",
    "nx1",
    "ny1",
    "nx2",
    "ny2",
    "confidence",
    "font_size",
    "annotated_path",
    "annotated_width",
    "annotated_height",
]


def run_ram(frames: pd.DataFrame, data_dir: Path, tagger: Tagger, reject: Reject, opts: DecodeOptions) -> pd.DataFrame:
    from forge.vision.tagger import TAG_COLUMNS, ram_rows

    rows: list[dict] = []
    data_dir = localize(location_of(data_dir), list(frames["path"]))  # frames another node made: fetched
    items = [((r.frame_id, r.batch), data_dir / r.path) for r in frames.itertuples(index=False)]
    for chunk in batched(
        prefetch(items, workers=opts.workers, ahead=opts.ahead, **opts.load_kwargs()), tagger.batch_size
    ):
        good = [(p.key, p.result) for p in chunk if not isinstance(p.result, LoadError)]
        for p in chunk:
            if isinstance(p.result, LoadError):
                reject(p.key[0], p.result.reason, p.result.error_class, p.result.detail)
        for ((fid, batch), _), tags in zip(good, tagger.tag([im for _, im in good]) if good else []):
            rows += ram_rows(fid, batch, tags, tagger.model_version)
    return pd.DataFrame(rows, columns=TAG_COLUMNS)


__all__ = [
    "DecodeOptions",
    "StageStats",
    "select_kept",
    "run_detection",
    "phase_breakdown",
    "add_phases",
    "run_indicators",
    "run_ram",
    "load_image",
]
