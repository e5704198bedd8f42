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

``detect_stream`` prepares batch i+1 (host to device copy and letterbox) in a thread while
batch i runs; decoding itself is already prefetched by ``forge.vision.images.prefetch``.
Outputs match the library's within interpolation rounding (tests/vision/test_fast_detect.py).
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from forge.onnx_session import OnnxModule
from forge.vision.detector import Detection, YoloDetector, parse_boxes
from forge.vision.images import DeviceImage, EncodedJPEG, LoadedImage, LoadError, load_image

T = TypeVar("T")
log = logging.getLogger(__name__)
PAD_VALUE = 114 / 255  # Ultralytics' letterbox grey
Frame = LoadedImage | DeviceImage


def _hw(im: Frame) -> tuple[int, int]:
    return im.hw if isinstance(im, DeviceImage) else im.rgb.shape[:2]


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
        self._lock = threading.Lock()

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
        from torchvision.io import ImageReadMode, decode_jpeg

        torch = self.torch
        datas = [torch.frombuffer(bytearray(images[i].data), dtype=torch.uint8) for i in todo]
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
        return out

    def preprocess(self, images: Sequence[Frame]) -> tuple[Any, list[tuple[float, int, int]]]:
        """Batch tensor (N, 3, H, W) on the device plus, per image, (gain, pad_left, pad_top)."""
        import torch.nn.functional as F

        torch = self.torch
        rect = len({_hw(im) for im in images}) == 1
        out, meta = [], []
        for im in images:
            h, w = _hw(im)
            nh, nw, top, bottom, left, right, _ = letterbox_geometry(h, w, self.base.imgsz, self.stride, rect)
            if isinstance(im, DeviceImage):
                x = im.tensor.unsqueeze(0)
            else:
                x = torch.from_numpy(np.require(im.rgb, np.uint8, ["C", "W"]))
                if self.dev.type == "cuda":
                    x = x.pin_memory().to(self.dev, non_blocking=True)
                x = x.permute(2, 0, 1).unsqueeze(0)
            x = x.to(self.dtype if self.dev.type == "cuda" else torch.float32)
            if (nh, nw) != (h, w):
                x = F.interpolate(x, size=(nh, nw), mode="bilinear", align_corners=False, antialias=False)
                x = x.round_().clamp_(0, 255)  # the library resizes uint8 images: keep integer levels
            x = x.div_(255)
            x = F.pad(x, (left, right, top, bottom), value=PAD_VALUE)
            out.append(x.to(self.dtype))
        batch = torch.cat(out, 0)
        H, W = batch.shape[2:]
        for im in images:  # back-mapping exactly as the library's scale_boxes derives it
            h, w = _hw(im)
            gain = min(H / h, W / w)
            meta.append((gain, round((W - w * gain) / 2 - 0.1), round((H - h * gain) / 2 - 0.1)))
        return batch, meta

    # -- 2.-4. forward, batched NMS, one transfer ------------------------------------------------

    def infer(self, batch: Any, meta: list[tuple[float, int, int]], images: Sequence[Frame]) -> list[list[Detection]]:
        import torchvision

        torch, b = self.torch, self.base
        with torch.inference_mode():
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
            # at most max_det per image, highest scores first (kept is score-sorted)
            rank = torch.zeros_like(img_idx)
            if len(img_idx):
                order = torch.argsort(img_idx, stable=True)
                counts = torch.bincount(img_idx, minlength=len(images))
                starts = torch.cumsum(counts, 0) - counts
                rank[order] = torch.arange(len(order), device=rank.device) - starts[img_idx[order]]
            sel = rank < b.max_det
            img_idx, boxes, sc, cl = img_idx[sel], boxes[sel], sc[sel], cl[sel]
            # letterbox -> decoded pixels -> original pixels, still on the device
            m = torch.as_tensor(meta, dtype=torch.float32, device=boxes.device)[img_idx]  # ratio, left, top
            boxes = boxes - torch.stack((m[:, 1], m[:, 2], m[:, 1], m[:, 2]), 1)
            boxes = boxes / m[:, :1]
            dims = torch.as_tensor([_hw(im)[::-1] for im in images], dtype=torch.float32, device=boxes.device)[img_idx]
            boxes = torch.minimum(boxes.clamp(min=0), torch.cat((dims, dims), 1))
            scale = torch.as_tensor([im.scale for im in images], dtype=torch.float32, device=boxes.device)[img_idx]
            boxes = boxes * scale[:, None]
            packed = torch.cat((img_idx[:, None].float(), boxes, sc[:, None], cl[:, None].float()), 1).cpu().numpy()
        out: list[list[Detection]] = []
        for i, im in enumerate(images):
            rows = packed[packed[:, 0] == i]
            out.append(
                parse_boxes(rows[:, 1:5], rows[:, 5], rows[:, 6].astype(int), im.orig_width, im.orig_height, b.names)
            )
        return out

    def _run(self, images: Sequence[Frame | LoadError], prepared: Any) -> list[list[Detection] | LoadError]:
        """Detections per image; a ``LoadError`` (a JPEG neither decoder could read) stays in its slot."""
        good = [im for im in images if not isinstance(im, LoadError)]
        dets = iter(self.infer(*prepared, good) if good else [])
        return [im if isinstance(im, LoadError) else next(dets) for im in images]

    def _prepare(self, images: Sequence[LoadedImage | EncodedJPEG]) -> tuple[list[Frame | LoadError], Any]:
        frames = self.decode(images)
        good = [im for im in frames if not isinstance(im, LoadError)]
        return frames, (self.preprocess(good) if good else None)

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
        """``(tag, images)`` in, ``(tag, detections)`` out, in order; batch i+1 is decoded (on the
        device), uploaded and letterboxed in a thread while batch i runs through the network."""

        def prep(item: tuple[T, Sequence[LoadedImage | EncodedJPEG]]):
            tag, ims = item
            return tag, (self._prepare(ims) if ims else None)

        it = iter(chunks)
        with ThreadPoolExecutor(1, thread_name_prefix="detect-prefetch") as pool:
            nxt = next(it, None)
            fut = pool.submit(prep, nxt) if nxt is not None else None
            while fut is not None:
                tag, prepared = fut.result()
                nxt = next(it, None)
                fut = pool.submit(prep, nxt) if (nxt is not None and self.prefetch_batches) else None
                dets = self._run(*prepared) if prepared is not None else []
                yield tag, dets
                if nxt is not None and fut is None:  # prefetch off: prepare inline
                    fut = pool.submit(prep, nxt)


ENGINES = ("auto", "tensor", "onnx", "ultralytics")


def with_engine(det: YoloDetector, engine: str, device_decode: bool | None = None) -> YoloDetector | TensorDetector:
    """``tensor`` wraps the loaded model; ``onnx`` = the same path with the network run by ONNX
    Runtime (CPU; forge/onnx_session.py); ``ultralytics`` keeps the library's predict; ``auto`` =
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
