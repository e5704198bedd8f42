"""Decode frames for the models robustly, and off the model's critical path.

Every frame is turned into an RGB ``uint8`` array whose longest side is at most
``max_side`` (boxes are mapped back to the original pixels with ``scale``), or into a
``LoadError`` with a stable reason code. Decoding runs in a thread pool ahead of the model
(PIL and cv2 release the GIL while decoding), so a GPU is not starved by CPU decoding.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

T = TypeVar("T")

DEFAULT_MAX_SIDE = 1920
DEFAULT_MIN_SIDE = 8
# Hard ceiling on declared pixels: above it we refuse to decode (a 60000x60000 PNG would need
# 10 GB). PIL's own bomb guard warns at 89 MP and raises at 179 MP; we decide ourselves.
DEFAULT_MAX_PIXELS = 400_000_000
# Above this the device decoder is not used: a full-size decode on the GPU costs 3 bytes a pixel
# per frame of a batch (an 8K frame is 33 MP, ~100 MB); larger JPEGs take the CPU's draft decode.
DEVICE_DECODE_MAX_PIXELS = 40_000_000


@dataclass(frozen=True)
class LoadedImage:
    """An RGB frame ready for a model. ``scale`` = original / decoded size (>= 1)."""

    rgb: np.ndarray
    orig_width: int
    orig_height: int
    scale: float
    mode: str  # the file's original PIL mode (L, RGBA, CMYK, ...)

    @property
    def bgr(self) -> np.ndarray:
        # Ultralytics treats numpy input as OpenCV BGR.
        return np.ascontiguousarray(self.rgb[:, :, ::-1])


@dataclass(frozen=True)
class EncodedJPEG:
    """A JPEG's bytes, to be decoded on the model's device (nvjpeg on CUDA) in batches.

    ``read_for_device`` hands over only complete files (end-of-image marker present), RGB or
    greyscale, upright (no EXIF rotation); the rest take the CPU path. ``path`` lets a failed
    device decode fall back to ``load_image``.
    """

    data: bytes
    path: Path
    orig_width: int
    orig_height: int
    mode: str


@dataclass(frozen=True)
class DeviceImage:
    """An RGB frame decoded on the model's device: ``tensor`` (3, H, W) uint8, full size."""

    tensor: Any
    orig_width: int
    orig_height: int
    mode: str
    scale: float = 1.0

    @property
    def hw(self) -> tuple[int, int]:
        return int(self.tensor.shape[1]), int(self.tensor.shape[2])


@dataclass(frozen=True)
class LoadError:
    reason: str  # stable code: missing_file, undecodable, too_small, too_large
    error_class: str
    detail: str


def load_image(
    path: str | Path,
    max_side: int = DEFAULT_MAX_SIDE,
    min_side: int = DEFAULT_MIN_SIDE,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> LoadedImage | LoadError:
    """Open ``path`` as RGB, downscaled so the longest side is <= ``max_side``."""
    path = Path(path)
    if not path.is_file():
        return LoadError("missing_file", "FileNotFoundError", str(path))
    try:
        with warnings.catch_warnings():
            # We enforce max_pixels ourselves below; PIL's warning would only be noise.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                w, h = im.size
                if w < min_side or h < min_side:
                    return LoadError("too_small", "", f"{w}x{h} < {min_side}px")
                if w * h > max_pixels:
                    return LoadError("too_large", "", f"{w}x{h} = {w * h} px > {max_pixels}")
                mode = im.mode
                if im.format == "JPEG":
                    # Let libjpeg decode at 1/2, 1/4 or 1/8 scale: a 12000x12000 JPEG then costs
                    # ~1500x1500 of memory and time instead of 432 MB.
                    im.draft("RGB", (max_side, max_side))
                # EXIF orientations 5-8 rotate by 90 degrees: the upright original swaps sides.
                if im.getexif().get(0x0112, 1) in (5, 6, 7, 8):
                    w, h = h, w
                im = _to_rgb(ImageOps.exif_transpose(im) or im)
                if max(im.size) > max_side:
                    im.thumbnail((max_side, max_side), Image.Resampling.BILINEAR)
                rgb = np.asarray(im, dtype=np.uint8)
    except Image.DecompressionBombError as exc:
        return LoadError("too_large", type(exc).__name__, str(exc))
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, ImportError) as exc:
        # Truncated, corrupt or non-image files: OSError ("image file is truncated"),
        # UnidentifiedImageError, SyntaxError (broken PNG chunks), ValueError (bad modes);
        # ImportError when a plugin wrapper (Ultralytics patches Image.open) lacks its extra.
        return LoadError("undecodable", type(exc).__name__, str(exc) or repr(exc))
    return LoadedImage(rgb=rgb, orig_width=w, orig_height=h, scale=w / rgb.shape[1], mode=mode)


def read_for_device(
    path: str | Path,
    max_side: int = DEFAULT_MAX_SIDE,
    min_side: int = DEFAULT_MIN_SIDE,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    device_max_pixels: int = DEVICE_DECODE_MAX_PIXELS,
) -> LoadedImage | EncodedJPEG | LoadError:
    """The file's bytes for the device decoder when it is a plain JPEG (header read only) within
    the size limits and at most ``device_max_pixels``; anything else goes to ``load_image``, which
    decodes huge JPEGs at a reduced scale and names the reject reasons.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
        if data[:2] == b"\xff\xd8" and data.rstrip(b"\x00").endswith(b"\xff\xd9"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                with Image.open(io.BytesIO(data)) as im:  # header only: no pixels decoded
                    w, h, mode = im.width, im.height, im.mode
                    orientation = im.getexif().get(0x0112, 1)
            fits = min(w, h) >= min_side and w * h <= min(max_pixels, device_max_pixels)
            if fits and mode in ("RGB", "L") and orientation == 1:
                return EncodedJPEG(data, path, w, h, mode)
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError):
        pass  # the CPU path names the reason
    return load_image(path, max_side=max_side, min_side=min_side, max_pixels=max_pixels)


def _to_rgb(im: Image.Image) -> Image.Image:
    if im.mode == "RGB":
        return im
    if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
        # Composite on white: a transparent background would otherwise turn black.
        rgba = im.convert("RGBA")
        bg = Image.new("RGB", rgba.size, (255, 255, 255))
        bg.paste(rgba, mask=rgba.getchannel("A"))
        return bg
    if im.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        arr = np.asarray(im, dtype=np.float64)
        lo, hi = float(arr.min()), float(arr.max())
        arr = (arr - lo) / (hi - lo) * 255.0 if hi > lo else np.zeros_like(arr)
        return Image.fromarray(arr.astype(np.uint8), "L").convert("RGB")
    # L, 1, P, CMYK, YCbCr, LAB, HSV: PIL converts these directly.
    return im.convert("RGB")


@dataclass(frozen=True)
class Prefetched(Generic[T]):
    key: T
    result: LoadedImage | EncodedJPEG | LoadError


def prefetch(
    items: Sequence[tuple[T, str | Path]] | Iterable[tuple[T, str | Path]],
    workers: int = 4,
    ahead: int = 64,
    loader: Callable[..., object] = load_image,
    **load_kwargs,
) -> Iterator[Prefetched[T]]:
    """Yield ``loader`` results (default ``load_image``) in input order, up to ``ahead`` frames
    in advance."""
    it = iter(items)
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="frame-decode") as pool:
        window: list[tuple[T, object]] = []
        for key, path in it:
            window.append((key, pool.submit(loader, path, **load_kwargs)))
            if len(window) >= ahead:
                k, fut = window.pop(0)
                yield Prefetched(k, fut.result())  # type: ignore[attr-defined]
        for k, fut in window:
            yield Prefetched(k, fut.result())  # type: ignore[attr-defined]


def batched(iterable: Iterable[T], n: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for x in iterable:
        batch.append(x)
        if len(batch) >= n:
            yield batch
            batch = []
    if batch:
        yield batch
