"""Images from folders and tables enter the frames table as one-frame items.

Every image is normalised the same way: EXIF orientation applied, first frame of an
animation, transparency composited on white, 16-bit / float / CMYK / palette / grey
converted to 8-bit RGB, and an image whose longer side exceeds ``max_side`` downscaled;
the row's ``transform`` names each change made (``; ``-separated; null when none). Empty,
unreadable, truncated, tiny (e.g. 1×1) and decompression-bomb-sized files are rejected with
a reason.

Sources are untrusted: a local file must still lie inside the policy's roots when it is read
(it may have become a link since listing), files and downloads are capped at the policy's
size, URLs pass its network policy (every connection checked), and the declared pixel
count is checked from the header before anything is decoded (``too_large``).
"""

from __future__ import annotations

import io
import os
import urllib.error
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

from forge.media.frames import blur_variance, encode_jpeg, write_bytes_atomic
from forge.media.hashing import open_image
from forge.media.policy import IngestPolicy, PolicyViolation, check_url, confine, network_guard, regular_file
from forge.media.sources import classify_error
from forge.provenance.versioning import sha256_bytes


@dataclass(frozen=True)
class ImageSettings:
    min_side: int = 32
    max_side: int = 4096
    max_pixels: int = 250_000_000  # larger = rejected as a decompression bomb, never decoded
    jpeg_quality: int = 95
    fetch_timeout_s: float = 20.0
    max_bytes: int = 256 * 1024**2  # a larger file or download is rejected (too_large)
    policy: IngestPolicy = IngestPolicy()


class ImageReject(Exception):
    def __init__(self, reason: str, detail: str, error_class: str = ""):
        super().__init__(detail)
        self.reason, self.error_class = reason, error_class


def read_source_bytes(
    path: str | None,
    url: str | None,
    timeout_s: float,
    max_bytes: int = 256 * 1024**2,
    policy: IngestPolicy | None = None,
) -> bytes:
    policy = policy or IngestPolicy()
    if path:
        try:
            p = confine(Path(path), policy, "image file")
            size = regular_file(p, "image file").st_size
        except PolicyViolation as exc:
            reason = "missing_file" if exc.reason == "missing_file" else exc.reason
            raise ImageReject(
                reason, exc.detail, "FileNotFoundError" if reason == "missing_file" else "PolicyViolation"
            ) from exc
        if size > max_bytes:
            raise ImageReject("too_large", f"{size} bytes > cap {max_bytes}")
        return p.read_bytes()
    if url:
        try:
            check_url(url, policy)
        except PolicyViolation as exc:
            raise ImageReject(exc.reason, exc.detail, "PolicyViolation") from exc
        with network_guard(policy) as guard:
            try:
                with urllib.request.urlopen(url, timeout=timeout_s) as resp:
                    data = resp.read(max_bytes + 1)
            except (urllib.error.URLError, TimeoutError, OSError) as exc:  # HTTPError is a URLError
                if guard.refused:
                    raise ImageReject(
                        "address_not_allowed",
                        f"a request went to {guard.refused[0]}, a non-public address (a redirect?); refused",
                        "PolicyViolation",
                    ) from exc
                code, _ = classify_error(exc)  # the video downloads' codes: not_found, timeout, connection_failed...
                raise ImageReject(code, str(exc), type(exc).__name__) from exc
        if len(data) > max_bytes:
            raise ImageReject("too_large", f"download exceeds {max_bytes} bytes")
        return data
    raise ImageReject("missing_file", "item has neither path nor url")


def _to_rgb(im: Image.Image) -> Image.Image:
    if im.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        arr = np.asarray(im, dtype=np.float64)
        lo, hi = float(arr.min()), float(arr.max())
        arr = np.zeros_like(arr) if hi <= lo else (arr - lo) / (hi - lo) * 255.0
        return Image.fromarray(arr.astype(np.uint8)).convert("RGB")
    if im.mode == "P":
        im = im.convert("RGBA")
    if im.mode in ("RGBA", "LA", "PA"):
        im = im.convert("RGBA")
        bg = Image.new("RGBA", im.size, (255, 255, 255, 255))
        return Image.alpha_composite(bg, im).convert("RGB")
    return im.convert("RGB")


# EXIF orientation (tag 0x0112) -> what ``ImageOps.exif_transpose`` does to the stored pixels.
_ORIENTATIONS = {
    2: "mirrored left-right",
    3: "rotated 180°",
    4: "mirrored top-bottom",
    5: "transposed (mirrored across the main diagonal)",
    6: "rotated 90° clockwise",
    7: "transversed (mirrored across the anti-diagonal)",
    8: "rotated 90° counter-clockwise",
}


def exif_orientation_note(im: Image.Image) -> str | None:
    """The ``transform`` note for the orientation ``ImageOps.exif_transpose`` will apply to ``im``
    (None when it applies none: tag absent, 1, or a value Pillow ignores)."""
    value = im.getexif().get(0x0112)  # a malformed block raises here as in exif_transpose: decode_error
    what = _ORIENTATIONS.get(value) if isinstance(value, int) else None
    return f"EXIF orientation {value}: {what}" if what else None


def normalise_image(data: bytes, settings: ImageSettings) -> tuple[np.ndarray, str | None]:
    """Decoded RGB array and a note on what was changed (None when nothing was)."""
    if not data:
        raise ImageReject("empty_file", "zero bytes")
    notes: list[str] = []
    old_limit = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = settings.max_pixels
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            im = open_image(io.BytesIO(data))  # not Ultralytics' patched Image.open (forge/media/hashing.py)
            w, h = im.size  # from the header: nothing is decoded yet
            if w * h > settings.max_pixels:
                raise ImageReject("too_large", f"{w}x{h} exceeds {settings.max_pixels} pixels")
            if getattr(im, "is_animated", False) and getattr(im, "n_frames", 1) > 1:
                notes.append(f"first frame of {im.n_frames}")
            im.load()
            turned = exif_orientation_note(im)
            im = ImageOps.exif_transpose(im) or im
            if turned:
                notes.append(turned)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageReject("too_large", str(exc), type(exc).__name__) from exc
    except Image.UnidentifiedImageError as exc:
        # PIL's message names the in-memory buffer's address: a different detail on every run.
        raise ImageReject("decode_error", "cannot identify image file", type(exc).__name__) from exc
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageReject("decode_error", str(exc), type(exc).__name__) from exc
    finally:
        Image.MAX_IMAGE_PIXELS = old_limit
    w, h = im.size
    if min(w, h) < settings.min_side:
        raise ImageReject("too_small", f"{w}x{h} is below the {settings.min_side}px minimum side")
    if im.mode != "RGB":
        notes.append(f"mode {im.mode} -> RGB")
    im = _to_rgb(im)
    if max(w, h) > settings.max_side:
        im.thumbnail((settings.max_side, settings.max_side), Image.Resampling.LANCZOS)
        notes.append(f"downscaled from {w}x{h} to {im.size[0]}x{im.size[1]}")
    return np.asarray(im), ("; ".join(notes) or None)


def image_frame(item: dict, out_dir: Path, data_dir: Path, settings: ImageSettings) -> dict:
    """One frames-table row for an image item (``item`` is a source_items row)."""
    data = read_source_bytes(
        item.get("path"), item.get("url"), settings.fetch_timeout_s, settings.max_bytes, settings.policy
    )
    rgb, note = normalise_image(data, settings)
    jpeg = encode_jpeg(rgb, settings.jpeg_quality)
    path = out_dir / f"{item['item_id']}.jpg"
    write_bytes_atomic(path, jpeg)
    h, w = rgb.shape[:2]
    return {
        "frame_id": item["item_id"],
        "item_id": item["item_id"],
        "clip_id": None,
        "kind": "image",
        "frame_index": 0,
        "timestamp_s": None,
        "path": os.path.relpath(path, data_dir),
        "width": int(w),
        "height": int(h),
        "blur_var": round(blur_variance(rgb), 3),
        "caption": item.get("caption"),
        "sha256": sha256_bytes(jpeg),
        "transform": note,
    }
