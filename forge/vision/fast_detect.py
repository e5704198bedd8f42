"""YOLO detection with the image path on the model's device (engine ``tensor``; engine ``onnx``:
the same path on the CPU with the network run by ONNX Runtime).

Ultralytics' ``predict`` letterboxes each image with OpenCV on the CPU, runs NMS image by image
and builds a ``Results`` object per image; on a GPU that starves the model. Here, per batch:

0. with ``device_decode`` (default on CUDA), plain JPEGs arrive as bytes and are decoded on the
   device in one batched call (nvjpeg; ``torchvision.io.decode_jpeg``), at full size, then
   resized straight to the letterbox as the library's OpenCV resize does; other files, and any
   JPEG the device decoder refuses, take the CPU decoder (``forge.vision.images``);
1. decoded uint8 frames are uploaded as they are (4x smaller than float) and letterboxed on the
   device: bilinear resize (``F.interpolate``), grey 114 padding, BGR order kept out (frames are
   RGB already), ``/255``, fp16 on CUDA; the geometry is Ultralytics' ``LetterBox`` (same ratio,
   same padding, the stride-rounded rectangle when a batch shares one shape);
2. one forward pass of the fused network;
3. NMS for the whole batch in ONE ``torchvision.ops.batched_nms`` call (groups = image x class,
   which is exactly the per-image, per-class NMS of the library);
4. boxes mapped back to the decoded and then the original pixels on the device, and moved to the
   CPU once per batch.

``detect_stream`` pipelines three threads: batch i+2 is decoded (device decode; the host waits
on the JPEG engines) while batch i+1 is uploaded and letterboxed and batch i runs; files are
read (and, without device decode, decoded) ahead by ``forge.vision.images.prefetch``.
Outputs match the library's within interpolation rounding (tests/vision/test_fast_detect.py).
"""

from __future__ import annotations

import copy
import logging
import time
import warnings
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from forge.models.onnx_session import OnnxModule
from forge.models.protocols import Detector, StreamingDetector
from forge.vision.detector import Detection, YoloDetector, parse_boxes
from forge.vision.images import DeviceImage, EncodedJPEG, LoadedImage, LoadError, load_image

T = TypeVar("T")
PHASES = ("decode", "letterbox", "network", "boxes")
log = logging.getLogger(__name__)
PAD_VALUE = 114 / 255  # Ultralytics' letterbox grey
# Source pixels letterboxed in one call on CUDA: 32 MP is ~190 MB as fp16 (a 40-MP frame goes alone).
LETTERBOX_CHUNK_PIXELS = 32_000_000
Frame = LoadedImage | DeviceImage


@dataclass(frozen=True)
class _Geometry:
    """What ``infer`` needs of a frame once it is letterboxed (its pixels are let go)."""

    hw: tuple[int, int]
    orig_width: int
    orig_height: int
    scale: float


def _hw(im: Frame | _Geometry) -> tuple[int, int]:
    return im.hw if isinstance(im, (DeviceImage, _Geometry)) else im.rgb.shape[:2]


def letterbox_geometry(
    h: int, w: int, imgsz: int, stride: int, rect: bool
) -> tuple[int, int, int, int, int, int, float]:
    """(new_h, new_w, top, bottom, left, right, ratio) as Ultralytics' LetterBox computes them."""
    r = min(imgsz / h, imgsz / w)
    nw, nh = max(round(w * r), 1), max(round(h * r), 1)
    dw, dh = imgsz - nw, imgsz - nh
    if rect:  # minimum rectangle: pad only up to the stride
        dw, dh = dw % stride, dh % stride
    dw, dh = dw / 2, dh / 2
    top, bottom = round(dh - 0.1), round(dh + 0.1)
    left, right = round(dw - 0.1), round(dw + 0.1)
    return nh, nw, top, bottom, left, right, r


class TensorDetector:
    """Batched YOLO on tensors. Wraps a loaded ``YoloDetector`` (same weights, names, thresholds)."""

    def __init__(
        self,
        base: YoloDetector,
        prefetch_batches: bool = True,
        runtime: str = "torch",
        device_decode: bool | None = None,
    ) -> None:
        import torch

        self.base = base
        self.torch = torch
        self.prefetch_batches = prefetch_batches
        self.dev = torch.device(base.device)
        net = copy.deepcopy(base.model.model)  # the library's own model object stays untouched
        net = net.fuse() if hasattr(net, "fuse") else net  # conv+bn folded, as the library predicts
        net = net.to(self.dev).eval()
        for p in net.parameters():
            p.requires_grad_(False)
        self.dtype = torch.float16 if base.half and self.dev.type == "cuda" else torch.float32
        self.stride = int(max(int(base.model.model.stride.max()), 32))
        if runtime == "onnx":
            if self.dev.type != "cpu":
                raise ValueError("detector engine 'onnx' runs on the CPU; on CUDA use 'tensor' or 'auto'")
            for m in net.modules():  # anchors from each input's shape (batches differ in shape)
                if hasattr(m, "dynamic") and hasattr(m, "anchors"):
                    m.dynamic = True
            self.net = OnnxModule(net.float(), torch.zeros(1, 3, base.imgsz, base.imgsz))
        elif runtime == "torch":
            self.net = net.half() if self.dtype == torch.float16 else net.float()
        else:
            raise ValueError(f"runtime must be torch or onnx, not {runtime!r}")
        self.engine = "onnx" if runtime == "onnx" else "tensor"
        # JPEG bytes decoded on the model's device (nvjpeg on CUDA); None = on CUDA only
        self.device_decode = (self.dev.type == "cuda") if device_decode is None else bool(device_decode)
        if self.device_decode and runtime != "torch":
            raise ValueError("device_decode needs the torch runtime (the frames become device tensors)")
        if self.device_decode:
            try:  # torchvision's image decoders are deprecated (0.29+) in favour of TorchCodec
                from torchvision.io import decode_jpeg  # noqa: F401
            except ImportError as exc:
                if device_decode:  # asked for by name: no silent substitute
                    raise ImportError(f"device_decode needs torchvision.io.decode_jpeg: {exc}") from exc
                log.warning("device_decode: torchvision.io.decode_jpeg unavailable (%s); CPU decode threads", exc)
                self.device_decode = False
        # host seconds per phase, summed over calls (under ``detect_stream`` decode and letterbox
        # run in threads of their own). CUDA work is asynchronous: a phase includes waiting
        # for the GPU only where it synchronises (``network`` ends with the copy to the CPU).
        self.phase_seconds = dict.fromkeys(PHASES, 0.0)
        # Frames of one shape letterboxed together on CUDA, where each call is a kernel launch;
        # on the CPU one at a time: a group's float copies outgrow the cache, and the grouped
        # letterbox measured 1.4-2x slower there (docs/performance.md). 0 = one frame per call.
        self.letterbox_chunk_pixels = LETTERBOX_CHUNK_PIXELS if self.dev.type == "cuda" else 0

    def __getattr__(self, name: str) -> Any:  # spec, names, device, half, imgsz, batch_size, ...
        return getattr(self.__dict__["base"], name)

    # -- 1. image path on the device -----------------------------------------------------------

    def decode(self, images: Sequence[LoadedImage | EncodedJPEG]) -> list[Frame | LoadError]:
        """``EncodedJPEG`` entries decoded on the device, in one batched call; the rest as they are.
        A JPEG the device decoder refuses goes through ``load_image`` (which may reject it)."""
        todo = [i for i, im in enumerate(images) if isinstance(im, EncodedJPEG)]
        out: list[Frame | LoadError] = list(images)  # type: ignore[arg-type]
        if not todo:
            return out
        t0 = time.perf_counter()
        from torchvision.io import ImageReadMode, decode_jpeg

        torch = self.torch
        with warnings.catch_warnings():  # read-only views: the decoders only read the bytes
            warnings.filterwarnings("ignore", message="The given buffer is not writable")
            # no copy: copying each file into a bytearray held the GIL 3-60 ms a batch (docs/performance.md)
            datas = [torch.frombuffer(images[i].data, dtype=torch.uint8) for i in todo]  # type: ignore[union-attr]
        try:
            decoded: list[Any] = decode_jpeg(datas, mode=ImageReadMode.RGB, device=self.dev)
        except RuntimeError:  # one bad file fails the batch: decode one by one
            decoded = []
            for data in datas:
                try:
                    decoded.append(decode_jpeg(data, mode=ImageReadMode.RGB, device=self.dev))
                except RuntimeError:
                    decoded.append(None)
        for i, t in zip(todo, decoded):
            enc: EncodedJPEG = images[i]  # type: ignore[assignment]
            if t is None or tuple(t.shape[1:]) != (enc.orig_height, enc.orig_width):
                out[i] = load_image(enc.path, max_side=self.base.imgsz)
            else:
                out[i] = DeviceImage(t, enc.orig_width, enc.orig_height, enc.mode)
        self.phase_seconds["decode"] += time.perf_counter() - t0
        return out

    def preprocess(self, images: Sequence[Frame]) -> tuple[Any, list[tuple[float, int, int]]]:
        """Batch tensor (N, 3, H, W) on the device plus, per image, (gain, pad_left, pad_top).

        On CUDA, frames of one shape (a video's) are letterboxed together: one upload, one resize
        and one pad per group instead of per frame (each call is a kernel launch the host pays
        while the GPU waits), in chunks of at most ``letterbox_chunk_pixels`` source pixels, so
        full-size device-decoded frames never need more than one chunk's float copy."""
        import torch.nn.functional as F

        torch, t0 = self.torch, time.perf_counter()
        shapes = [_hw(im) for im in images]
        rect = len(set(shapes)) == 1
        geo = [letterbox_geometry(h, w, self.base.imgsz, self.stride, rect) for h, w in shapes]
        nh, nw, top, bottom, left, right, _ = geo[0]
        H, W = nh + top + bottom, nw + left + right  # the same for every image (square, or one shape)
        batch = torch.empty((len(images), 3, H, W), dtype=self.dtype, device=self.dev)
        groups: dict[tuple[tuple[int, int], bool], list[int]] = {}
        for i, im in enumerate(images):
            groups.setdefault((shapes[i], isinstance(im, DeviceImage)), []).append(i)
        for ((h, w), on_device), idx in groups.items():
            per = max(1, self.letterbox_chunk_pixels // (h * w))
            for s in range(0, len(idx), per):
                part = idx[s : s + per]
                if on_device:
                    ts = [images[i].tensor for i in part]  # type: ignore[union-attr]
                    x = ts[0][None] if len(ts) == 1 else torch.stack(ts)
                else:
                    rgbs = [np.require(images[i].rgb, np.uint8, ["C", "W"]) for i in part]  # type: ignore[union-attr]
                    x = torch.from_numpy(rgbs[0][None] if len(rgbs) == 1 else np.stack(rgbs))
                    if self.dev.type == "cuda":
                        x = x.pin_memory().to(self.dev, non_blocking=True)
                    x = x.permute(0, 3, 1, 2)
                x = x.to(self.dtype)
                nh, nw, top, bottom, left, right, _ = geo[part[0]]
                if (nh, nw) != (h, w):
                    x = F.interpolate(x, size=(nh, nw), mode="bilinear", align_corners=False, antialias=False)
                    x = x.round_().clamp_(0, 255)  # the library resizes uint8 images: keep integer levels
                x = F.pad(x.div_(255), (left, right, top, bottom), value=PAD_VALUE)
                if part == list(range(part[0], part[-1] + 1)):
                    batch[part[0] : part[-1] + 1] = x
                else:
                    batch[torch.as_tensor(part, device=self.dev)] = x
        meta = []
        for h, w in shapes:  # back-mapping exactly as the library's scale_boxes derives it
            gain = min(H / h, W / w)
            meta.append((gain, round((W - w * gain) / 2 - 0.1), round((H - h * gain) / 2 - 0.1)))
        self.phase_seconds["letterbox"] += time.perf_counter() - t0
        return batch, meta

    # -- 2.-4. forward, batched NMS, one transfer ------------------------------------------------

    def infer(self, batch: Any, meta: list[tuple[float, int, int]], images: Sequence[Frame]) -> list[list[Detection]]:
        import torchvision

        torch, b = self.torch, self.base
        n, t0 = len(images), time.perf_counter()
        with torch.inference_mode():
            # per image: gain, pad left, pad top, decoded width, height, decoded -> original scale;
            # one host-to-device copy, queued before the forward pass so it never waits on it
            info = torch.tensor([(*m, *_hw(im)[::-1], im.scale) for m, im in zip(meta, images)], dtype=torch.float32)
            info = info.pin_memory().to(self.dev, non_blocking=True) if self.dev.type == "cuda" else info
            pred = self.net(batch)
            pred = pred[0] if isinstance(pred, (list, tuple)) else pred  # (N, 4 + nc, anchors)
            pred = pred.float().transpose(1, 2)  # (N, anchors, 4 + nc)
            scores, cls = pred[..., 4:].max(-1)
            keep = scores > b.conf
            if b.classes is not None:
                keep &= torch.isin(cls, torch.as_tensor(b.classes, device=cls.device))
            img_idx, anchor = keep.nonzero(as_tuple=True)
            xywh = pred[img_idx, anchor, :4]
            boxes = torch.cat((xywh[:, :2] - xywh[:, 2:] / 2, xywh[:, :2] + xywh[:, 2:] / 2), 1)
            sc, cl = scores[img_idx, anchor], cls[img_idx, anchor]
            groups = img_idx * pred.shape[-1] + cl  # NMS within (image, class) only
            kept = torchvision.ops.batched_nms(boxes, sc, groups, b.iou)  # sorted by score
            img_idx, boxes, sc, cl = img_idx[kept], boxes[kept], sc[kept], cl[kept]
            # at most max_det per image, highest scores first (kept is score-sorted); counts by
            # index_add (bincount would synchronise with the GPU to size its output)
            rank = torch.zeros_like(img_idx)
            if len(img_idx):
                order = torch.argsort(img_idx, stable=True)
                counts = torch.zeros(n, dtype=img_idx.dtype, device=img_idx.device)
                counts.index_add_(0, img_idx, torch.ones_like(img_idx))
                starts = torch.cumsum(counts, 0) - counts
                rank[order] = torch.arange(len(order), device=rank.device) - starts[img_idx[order]]
            sel = rank < b.max_det
            img_idx, boxes, sc, cl = img_idx[sel], boxes[sel], sc[sel], cl[sel]
            # letterbox -> decoded pixels -> original pixels, still on the device
            m = info[img_idx]
            boxes = (boxes - torch.cat((m[:, 1:3], m[:, 1:3]), 1)) / m[:, :1]
            boxes = torch.minimum(boxes.clamp(min=0), torch.cat((m[:, 3:5], m[:, 3:5]), 1)) * m[:, 5:6]
            packed = torch.cat((img_idx[:, None].float(), boxes, sc[:, None], cl[:, None].float()), 1).cpu().numpy()
        t1 = time.perf_counter()
        # rows grouped by image (stable: each image's rows stay score-sorted)
        packed = packed[np.argsort(packed[:, 0], kind="stable")]
        ends = np.searchsorted(packed[:, 0], np.arange(n), side="right")
        out: list[list[Detection]] = []
        for i, im in enumerate(images):
            rows = packed[(ends[i - 1] if i else 0) : ends[i]]
            out.append(
                parse_boxes(rows[:, 1:5], rows[:, 5], rows[:, 6].astype(int), im.orig_width, im.orig_height, b.names)
            )
        self.phase_seconds["network"] += t1 - t0
        self.phase_seconds["boxes"] += time.perf_counter() - t1
        return out

    def _run(self, images: Sequence[Frame | LoadError], prepared: Any) -> list[list[Detection] | LoadError]:
        """Detections per image; a ``LoadError`` (a JPEG neither decoder could read) stays in its slot."""
        good = [im for im in images if not isinstance(im, LoadError)]
        dets = iter(self.infer(*prepared, good) if good else [])
        return [im if isinstance(im, LoadError) else next(dets) for im in images]

    def _prepare(self, images: Sequence[LoadedImage | EncodedJPEG]) -> tuple[list[Frame | LoadError], Any]:
        return self._letterbox(self.decode(images))

    def _letterbox(self, frames: list[Frame | LoadError]) -> tuple[list[Frame | LoadError], Any]:
        good = [im for im in frames if not isinstance(im, LoadError)]
        prepared = self.preprocess(good) if good else None
        # the letterboxed batch is all the network needs: the decoded pixels (full-size frames
        # on the device, batches waiting in the pipeline) can go now
        kept = [
            f if isinstance(f, LoadError) else _Geometry(_hw(f), f.orig_width, f.orig_height, f.scale) for f in frames
        ]
        return kept, prepared  # type: ignore[return-value]

    def detect(self, images: Sequence[LoadedImage | EncodedJPEG]) -> list[list[Detection] | LoadError]:
        """Same contract as ``YoloDetector.detect``: boxes on the ORIGINAL pixel grid. (Only an
        ``EncodedJPEG`` input can come back as a ``LoadError``.)"""
        out: list[list[Detection] | LoadError] = []
        for i in range(0, len(images), self.base.batch_size):
            out += self._run(*self._prepare(images[i : i + self.base.batch_size]))
        return out

    def detect_stream(
        self, chunks: Iterable[tuple[T, Sequence[LoadedImage | EncodedJPEG]]]
    ) -> Iterator[tuple[T, list[list[Detection] | LoadError]]]:
        """``(tag, images)`` in, ``(tag, detections)`` out, in order. Three stages overlap, each in
        its own thread: batch i+2 is decoded (on the device: the JPEG engines, host waiting on
        them) while batch i+1 is letterboxed and batch i runs through the network; with
        ``prefetch_batches`` off, one batch at a time."""
        ahead = 2 if self.prefetch_batches else 0
        it = iter(chunks)
        with (
            ThreadPoolExecutor(1, thread_name_prefix="detect-decode") as decoding,
            ThreadPoolExecutor(1, thread_name_prefix="detect-letterbox") as letterboxing,
        ):

            def submit(item: tuple[T, Sequence[LoadedImage | EncodedJPEG]]):
                tag, ims = item
                if not ims:
                    return tag, None
                decoded = decoding.submit(self.decode, ims)  # single-thread pools: FIFO, in order
                return tag, letterboxing.submit(lambda: self._letterbox(decoded.result()))

            pending: deque = deque()

            def refill(n: int) -> None:
                while len(pending) < n and (nxt := next(it, None)) is not None:
                    pending.append(submit(nxt))

            refill(ahead + 1)
            while pending:
                tag, fut = pending.popleft()
                prepared = fut.result() if fut is not None else None
                refill(ahead)  # the next batches prepare while this one runs
                dets = self._run(*prepared) if prepared is not None else []
                yield tag, dets
                if not ahead:
                    refill(1)  # prefetch off: the next batch is prepared only now


ENGINES = ("auto", "tensor", "onnx", "ultralytics")


def expected_setup(engine: str, device: str, half: bool | None, device_decode: bool | None) -> dict[str, Any]:
    """What, beyond weights and thresholds, changes a frame's detections, as ``with_engine`` and
    ``YoloDetector`` will resolve it before any model is loaded: the engine (tensor, onnx and
    ultralytics agree within interpolation rounding, not bit for bit), the device kind, fp16,
    and where JPEGs are decoded (device decoding letterboxes from full size). Part of the
    detections cache key, so reused rows come from the setup the asset's metadata names."""
    from forge.vision.detector import pick_device

    kind = pick_device(device).split(":")[0]
    if engine == "auto":
        engine = "tensor" if kind == "cuda" else "onnx"
    return {
        "engine": engine,
        "device": kind,
        "fp16": kind == "cuda" and (half is None or bool(half)),
        "device_decode": engine == "tensor" and (kind == "cuda" if device_decode is None else bool(device_decode)),
    }


def actual_setup(model: Detector) -> dict[str, Any]:
    """``expected_setup``'s fields read off a loaded detector (``YoloDetector`` or ``TensorDetector``)."""
    kind = str(model.device).split(":")[0]
    streaming = model if isinstance(model, StreamingDetector) else None
    return {
        "engine": streaming.engine if streaming is not None else "ultralytics",
        "device": kind,
        "fp16": kind == "cuda" and bool(model.half),
        "device_decode": bool(streaming.device_decode) if streaming is not None else False,
    }


def with_engine(det: YoloDetector, engine: str, device_decode: bool | None = None) -> YoloDetector | TensorDetector:
    """``tensor`` wraps the loaded model; ``onnx`` = the same path with the network run by ONNX
    Runtime (CPU; forge/models/onnx_session.py); ``ultralytics`` keeps the library's predict; ``auto`` =
    tensor on CUDA, onnx on CPU (where each measured fastest: docs/performance.md).
    ``device_decode``: the tensor engine's (None = on CUDA)."""
    if engine not in ENGINES:
        raise ValueError(f"detector engine must be one of {ENGINES}, not {engine!r}")
    if engine == "auto":
        if str(det.device).startswith("cuda"):
            return TensorDetector(det, device_decode=device_decode)
        try:
            return TensorDetector(det, runtime="onnx")
        except Exception as exc:  # noqa: BLE001 - e.g. a network the exporter cannot trace: keep going
            log.warning(
                "detector engine auto: ONNX Runtime unavailable (%s: %s); using the library's predict",
                type(exc).__name__,
                exc,
            )
            return det
    if engine == "ultralytics":
        return det
    if engine == "onnx":
        return TensorDetector(det, runtime="onnx")
    return TensorDetector(det, device_decode=device_decode)
