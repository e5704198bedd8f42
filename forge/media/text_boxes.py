"""Text-area ratio from EasyOCR's text detector alone (CRAFT), batched; recognition on demand.

The ratio only needs where the text is, not what it says. ``readtext`` runs the detector and
then the recogniser on every box; on a CPU the recogniser is most of the time. Here the
detector runs on a stack of same-sized frames in one forward pass (``Reader.detect`` takes a
4-D batch), the boxes become the same polygons ``readtext`` reports (horizontal boxes clipped
to the image, free-form quads as they are), and the ratio is ``forge.media.ocr``'s union of
those polygons. The recogniser runs afterwards, on the boxes already found, only for the
frames whose text a later stage reads (``needs_text``).

Same frame, same ``max_side``, same detector settings -> the same boxes as ``ocr_frame``;
batching changes only floating-point summation order inside the network, so a box at a score
threshold can rarely flip (tests/filters/test_text_boxes.py states the tolerance).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import cv2
import numpy as np

from forge.media.ocr import OCRResult, load_rgb, ocr_frame, shrink, union_area_ratio
from forge.models.protocols import OCR, OCRReader
from forge.scale.ray_pool import (
    RayPlacement,
    actor_pool,
    ask_each,
    configured_placement,
    keep_to_declared_cpus,
    map_shards,
)
from forge.storage.location import location_of
from forge.storage.objects import localize

if TYPE_CHECKING:
    import pandas as pd

K = TypeVar("K")


@dataclass(frozen=True)
class DetectedText:
    """Detector output of one frame, in the coordinates of the shrunk copy the detector saw."""

    horizontal: list[list[int]]  # [x_min, x_max, y_min, y_max]
    free: list[list[list[float]]]  # quads [[x, y] x 4]
    scale: float  # shrunk / original
    width: int  # original size
    height: int

    def polygons(self, small_w: int, small_h: int) -> list[list[list[float]]]:
        """The polygons ``readtext`` would report (its crop clips horizontal boxes to the image)."""
        out: list[list[list[float]]] = [[[float(x), float(y)] for x, y in q] for q in self.free]
        for x0, x1, y0, y1 in self.horizontal:
            x0, x1, y0, y1 = max(0, x0), min(x1, small_w), max(0, y0), min(y1, small_h)
            out.append([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])
        return out


def _original_pixels(polys: Sequence[Sequence[Sequence[float]]], scale: float) -> list[list[list[float]]]:
    # Same rounding as ocr_frame, so the two paths rasterise identical polygons.
    return [[[round(float(x) / scale, 1), round(float(y) / scale, 1)] for x, y in p] for p in polys]


def ratio_result(det: DetectedText, small_w: int, small_h: int) -> OCRResult:
    """Ratio and boxes without text (``text`` = "" and ``conf`` = None: not recognised)."""
    polys = _original_pixels(det.polygons(small_w, small_h), det.scale)
    return OCRResult(
        ratio=union_area_ratio(polys, det.width, det.height),
        n_boxes=len(polys),
        text="",
        boxes=[{"poly": p, "text": "", "conf": None} for p in polys],
        width=det.width,
        height=det.height,
    )


class _KnownBoxes:
    """A ``Reader``-shaped adapter: ``readtext`` = recognise the boxes the detector already found."""

    def __init__(self, reader: Any, det: DetectedText) -> None:
        self.reader, self.det = reader, det

    def readtext(self, small: np.ndarray, **kwargs: Any) -> list[tuple[Any, str, float]]:
        grey = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)  # what readtext's reformat_input does
        return self.reader.recognize(grey, self.det.horizontal, self.det.free, reformat=False, **kwargs)


def recognise(reader: Any, rgb: np.ndarray, det: DetectedText, max_side: int) -> OCRResult:
    """Full OCR result (text + confidences) for boxes found earlier; no second detection."""
    return ocr_frame(_KnownBoxes(reader, det), rgb, max_side=max_side)


def detect_batch(
    reader: Any,
    smalls: Sequence[np.ndarray],
    scales: Sequence[float],
    sizes: Sequence[tuple[int, int]],
    **detect_kwargs: Any,
) -> list[DetectedText]:
    """One detector forward pass over same-shaped RGB arrays (the shrunk copies)."""
    if not smalls:
        return []
    if len({s.shape for s in smalls}) != 1:
        raise ValueError("detect_batch needs arrays of one shape; group frames by size first")
    stack = np.ascontiguousarray(np.stack(smalls)) if len(smalls) > 1 else smalls[0]
    horizontal, free = reader.detect(stack, reformat=False, **detect_kwargs)
    return [
        DetectedText([[int(v) for v in b] for b in h], [[[float(x), float(y)] for x, y in q] for q in f], sc, w, hh)
        for h, f, sc, (w, hh) in zip(horizontal, free, scales, sizes)
    ]


def text_needed(rule: str, max_ratio: float) -> Callable[[str, OCRResult], bool] | None:
    """Which frames get recognised after detection, from ``(frame kind, ratio-only result)``.

    ``needed``: the ones whose text can reach evidence (stills that pass the filter, every
    sampled clip frame: a passing clip may hold a text-heavy frame); ``all``; ``none``.
    """
    if rule == "none":
        return None
    if rule == "all":
        return lambda kind, res: True
    if rule == "needed":
        return lambda kind, res: kind == "clip_frame" or res.ratio <= max_ratio
    raise ValueError(f"recognise must be needed, all or none, not {rule!r}")


@dataclass(frozen=True)
class Measured(Generic[K]):
    key: K
    result: OCRResult | None
    error: Exception | None = None


def _decode(path: Any, max_side: int) -> tuple[np.ndarray, np.ndarray, float]:
    rgb = load_rgb(path)
    small, scale = shrink(rgb, max_side)
    return rgb, small, scale


# Most chunks in flight on a CUDA reader: on an H200 with 16 cores, 1 / 4 / 8 gave 43 / 84 / 103
# images/s (docs/performance.md, OCR on GPU).
GPU_DETECT_WORKERS = 8


def auto_detect_workers(reader: OCRReader) -> int:
    """Chunks to run at once: 1 on the CPU; on CUDA half the CPUs this process was given (a Ray
    actor: its ``num_cpus``, via ``OMP_NUM_THREADS``), at least 2, at most ``GPU_DETECT_WORKERS``."""
    if not str(reader.device).startswith("cuda"):
        return 1
    from forge.media.frames import frame_workers

    return min(GPU_DETECT_WORKERS, max(2, frame_workers() // 2))


def measure_frames(
    reader: OCRReader,
    items: Iterable[tuple[K, Any]],
    max_side: int,
    batch_size: int = 8,
    needs_text: Callable[[K, OCRResult], bool] | None = None,
    decode_workers: int | None = None,
    detect_workers: int | None = None,
    **detect_kwargs: Any,
) -> Iterator[Measured[K]]:
    """Text ratio of each ``(key, image path)``, in input order.

    Frames are decoded and shrunk in threads ahead of the detector (cv2 and the JPEG decoder
    release the GIL); a window of ``4 * batch_size`` frames is grouped by shrunk size (frames
    of one video share it) and each group goes through the detector ``batch_size`` at a time.
    ``needs_text(key, ratio_only_result)`` picks the frames that are then recognised; the others
    keep ``text = ""``. A frame that cannot be decoded or measured comes back with ``error``.

    ``detect_workers`` > 1 runs that many chunks through ``reader.detect`` at once, in threads:
    on a GPU the library's per-image CPU work around the forward pass (resize, normalise, box
    extraction; ~12 ms per 960 px frame) otherwise leaves the device idle. Each chunk's result
    is the same as when run alone; on the CPU keep 1 (the detector already uses every core).
    ``None``: ``auto_detect_workers(reader)``; ``decode_workers`` ``None``: as many as that, at
    least 2.
    """
    batch_size = max(1, batch_size)
    workers = max(1, auto_detect_workers(reader) if detect_workers is None else detect_workers)
    decode_workers = max(2, workers) if decode_workers is None else decode_workers
    window = max(4, 2 * workers) * batch_size
    with (
        ThreadPoolExecutor(max(1, decode_workers), thread_name_prefix="ocr-decode") as pool,
        ThreadPoolExecutor(workers, thread_name_prefix="ocr-detect") as detect_pool,
    ):
        run = detect_pool.map if workers > 1 else map
        pending: list[tuple[K, Any]] = []
        it = iter(items)
        for key, path in it:
            pending.append((key, pool.submit(_decode, path, max_side)))
            if len(pending) >= window:
                yield from _measure_window(reader, pending, max_side, batch_size, needs_text, detect_kwargs, run)
                pending = []
        if pending:
            yield from _measure_window(reader, pending, max_side, batch_size, needs_text, detect_kwargs, run)


def _measure_window(
    reader: Any,
    pending: list[tuple[K, Any]],
    max_side: int,
    batch_size: int,
    needs_text: Callable[[K, OCRResult], bool] | None,
    detect_kwargs: dict,
    run: Callable = map,
) -> Iterator[Measured[K]]:
    decoded: dict[int, tuple[np.ndarray, np.ndarray, float]] = {}
    out: dict[int, Measured[K]] = {}
    for i, (key, fut) in enumerate(pending):
        try:
            decoded[i] = fut.result()
        except Exception as exc:  # noqa: BLE001 - one bad file is a reject, the window goes on
            out[i] = Measured(key, None, exc)
    groups: dict[tuple, list[int]] = {}
    for i, (_, small, _) in decoded.items():
        groups.setdefault(small.shape, []).append(i)
    chunks = [idx[j : j + batch_size] for idx in groups.values() for j in range(0, len(idx), batch_size)]

    def measure(chunk: list[int]) -> dict[int, Measured[K]]:
        try:
            dets = detect_batch(
                reader,
                [decoded[i][1] for i in chunk],
                [decoded[i][2] for i in chunk],
                [(decoded[i][0].shape[1], decoded[i][0].shape[0]) for i in chunk],
                **detect_kwargs,
            )
        except Exception as exc:  # noqa: BLE001 - the whole chunk failed: record each frame
            return {i: Measured(pending[i][0], None, exc) for i in chunk}
        done: dict[int, Measured[K]] = {}
        for i, det in zip(chunk, dets):
            key, (rgb, small, _) = pending[i][0], decoded[i]
            try:
                res = ratio_result(det, small.shape[1], small.shape[0])
                if res.n_boxes and needs_text is not None and needs_text(key, res):
                    res = recognise(reader, rgb, det, max_side)
                done[i] = Measured(key, res)
            except Exception as exc:  # noqa: BLE001
                done[i] = Measured(key, None, exc)
        return done

    for done in run(measure, chunks):
        out.update(done)
    for i in range(len(pending)):
        yield out[i]


def measure_kept_frames(
    ocr: OCR,
    frames: Any,
    data_dir: Any,
    max_ratio: float,
    method: str = "detect",
    recognise: str = "needed",
    batch_size: int = 8,
) -> Iterator[tuple[Any, OCRResult | None, Exception | None]]:
    """``(frame row, result, error)`` per row of ``frames`` (columns path, kind), in order.

    ``ocr``: the ``OCRResource`` (reader, ``max_side``, ``read``). ``method="readtext"``: the
    full reader per frame; ``"detect"``: ``measure_frames`` here, or on Ray actors when a Ray
    address is configured (``OCRWorker`` below, on forge/scale/ray_pool.py's actor pool).
    """
    rows = list(frames.itertuples(index=False))
    if not configured_placement("text_ratio").enabled:  # in-process: frames another node made are fetched
        data_dir = localize(location_of(data_dir), [fr.path for fr in rows])
    if method == "readtext":
        for fr in rows:
            try:
                yield fr, ocr.read(load_rgb(Path(data_dir) / fr.path)), None
            except Exception as exc:  # noqa: BLE001 - recorded by the caller
                yield fr, None, exc
        return
    if method != "detect":
        raise ValueError(f"method must be detect or readtext, not {method!r}")
    placement = configured_placement("text_ratio")
    if placement.enabled:
        engines: set[tuple[str, str]] = set()
        pairs = ocr_on_ray(
            placement,
            ocr_reader_args(ocr),
            frames,
            Path(data_dir),
            ocr.max_side,
            batch_size,
            recognise,
            max_ratio,
            engines,
        )
        ocr.note_remote_engines(engines)
        yield from ((fr, res, err) for fr, (res, err) in zip(rows, pairs))
        return
    wants = text_needed(recognise, max_ratio)
    for m in measure_frames(
        ocr.detect_reader(),
        [(fr, Path(data_dir) / fr.path) for fr in rows],
        ocr.max_side,
        batch_size,
        needs_text=wants and (lambda fr, r: wants(fr.kind, r)),
    ):
        yield m.key, m.result, m.error


class OCRWorker:
    """The text_ratio stage's Ray worker (``forge.scale.ray_pool``): one EasyOCR reader per actor;
    ``run`` = ``measure_frames`` on a shard."""

    def __init__(self, reader_args: tuple) -> None:
        keep_to_declared_cpus()
        from forge.media.ocr_reader import build_reader

        self.reader = build_reader(*reader_args)

    def run(
        self, frames: pd.DataFrame, data_dir: str, max_side: int, batch: int, recognise: str, max_ratio: float
    ) -> list[tuple[Any, Exception | None]]:
        wants = text_needed(recognise, max_ratio)
        kinds = list(frames["kind"])
        root = localize(data_dir, list(frames["path"]))  # on object storage: fetched into this node's work dir
        items = [(i, root / p) for i, p in enumerate(frames["path"])]
        return [
            (m.result, m.error)
            for m in measure_frames(
                self.reader, items, max_side, batch, needs_text=wants and (lambda i, r: wants(kinds[i], r))
            )
        ]


def ocr_reader_args(ocr: OCR) -> tuple:
    """``build_reader`` arguments of an OCRResource; the GPU flag follows the placement's GPUs.
    (The reader makes its own private network folder per process: forge/media/ocr_reader.py.)"""
    return tuple(ocr.languages), ocr.model_dir, bool(ocr.gpu), ocr.detector_engine


def _replica_engine(worker: OCRWorker) -> tuple[str, str]:
    """What runs a replica's text detector, and the digest of its ONNX graph ("" for torch)."""
    from forge.media.text_detector import detector_identity

    return detector_identity(worker.reader)


def ocr_on_ray(
    placement: RayPlacement,
    reader_args: tuple,
    frames: pd.DataFrame,
    data_dir: Path,
    max_side: int,
    batch: int,
    recognise: str,
    max_ratio: float,
    engines: set[tuple[str, str]] | None = None,
) -> list[tuple[Any, Exception | None]]:
    """(OCRResult | None, error | None) per frame, in frame order, measured by OCR actors.
    ``engines`` receives each replica's ``(detector engine, graph digest)``."""
    if frames.empty:
        return []
    args = (reader_args[0], reader_args[1], placement.num_gpus > 0 or reader_args[2], *reader_args[3:])
    out: list[tuple[Any, Exception | None]] = []
    with actor_pool(placement, partial(OCRWorker, args)) as pool:
        for part in map_shards(
            pool,
            frames.reset_index(drop=True)[["kind", "path"]],
            placement.shard_frames,
            location_of(data_dir),  # a URL on object storage: each actor fetches its frames itself
            max_side,
            batch,
            recognise,
            max_ratio,
        ):
            out += part
        if engines is not None:
            engines.update(ask_each(pool, _replica_engine))
    return out
