"""Images for vision prompts: resized, JPEG-encoded, sent as base64 data URLs.

The cache key uses a hash of the source bytes plus the encoding settings, so a cache hit
never decodes or re-encodes the image; encoding happens only for requests actually sent,
and an LRU keeps frames shared by several requests (generator and judge) encoded once.
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image


@dataclass(frozen=True)
class ImageInput:
    """An image sent with a request: a file path (resized/encoded by the engine) or raw bytes."""

    path: Path | None = None
    data: bytes | None = None
    detail: str = "auto"


def image_bytes(img: ImageInput) -> bytes:
    if img.data is not None:
        return img.data
    if img.path is not None:
        with open(img.path, "rb") as fh:
            return fh.read()
    raise ValueError("ImageInput needs a path or data")


class ImageEncoder:
    def __init__(self, max_side: int = 768, quality: int = 85, lru: int = 256):
        self.max_side, self.quality = int(max_side), int(quality)
        self._lru: OrderedDict[str, str] = OrderedDict()
        self._lru_size = lru

    def key(self, img: ImageInput) -> dict[str, Any]:
        """What the cache key sees of an image: its content hash and how it is encoded."""
        digest = hashlib.sha256(image_bytes(img)).hexdigest()
        return {
            "type": "image",
            "sha256": digest,
            "max_side": self.max_side,
            "quality": self.quality,
            "detail": img.detail,
        }

    def encode(self, raw: bytes) -> bytes:
        with Image.open(io.BytesIO(raw)) as im:
            im = im.convert("RGB")
            if max(im.size) > self.max_side:
                im.thumbnail((self.max_side, self.max_side), Image.Resampling.LANCZOS)
            buf = io.BytesIO()
            im.save(buf, format="JPEG", quality=self.quality, optimize=True)
        return buf.getvalue()

    def data_url(self, img: ImageInput) -> str:
        raw = image_bytes(img)
        digest = hashlib.sha256(raw).hexdigest()
        if digest in self._lru:
            self._lru.move_to_end(digest)
            return self._lru[digest]
        url = "data:image/jpeg;base64," + base64.b64encode(self.encode(raw)).decode()
        self._lru[digest] = url
        if len(self._lru) > self._lru_size:
            self._lru.popitem(last=False)
        return url

    def part(self, img: ImageInput) -> dict[str, Any]:
        return {"type": "image_url", "image_url": {"url": self.data_url(img), "detail": img.detail}}
