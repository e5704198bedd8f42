"""Object tagger resource: ``yolo`` (detector class names with counts, default) or ``ram``.

``ram`` needs the optional recognize-anything package and a checkpoint path
(``SUBTEXT_RAM_CHECKPOINT``); it is loaded once per process. It was NOT verified on real
weights here (none can be obtained on these machines).
"""

from __future__ import annotations

import os
import threading
from typing import Literal

import dagster as dg
from pydantic import PrivateAttr

from forge.models.weights import weights_identity
from forge.vision.tagger import RamTagger

_CACHE: dict[tuple, RamTagger] = {}
_LOCK = threading.Lock()


class TaggerResource(dg.ConfigurableResource):
    backend: Literal["yolo", "ram"] = "yolo"
    ram_checkpoint: str = ""
    ram_variant: Literal["ram", "ram_plus"] = "ram"
    ram_vit: str = "swin_l"
    image_size: int = 384
    device: str = "auto"
    batch_size: int = 8

    _tagger: RamTagger | None = PrivateAttr(default=None)

    def ram_kwargs(self) -> dict:
        """``RamTagger`` arguments (what a Ray replica builds its model from)."""
        return {
            "checkpoint": self.ram_checkpoint,
            "variant": self.ram_variant,
            "vit": self.ram_vit,
            "image_size": self.image_size,
            "device": self.device,
            "batch_size": self.batch_size,
        }

    def get_ram(self) -> RamTagger:
        """The in-process model (loaded once per process)."""
        if self.backend != "ram":
            raise ValueError("get_ram() needs backend='ram'")
        if self._tagger is None:
            kwargs = self.ram_kwargs()
            key = tuple(kwargs.values())
            with _LOCK:
                if key not in _CACHE:
                    _CACHE[key] = RamTagger(**kwargs)
                self._tagger = _CACHE[key]
        return self._tagger


def tagger_version(tagger: TaggerResource) -> dict[str, object]:
    """What decides the tags: the backend and, for RAM, its checkpoint (see ``model_version``)."""
    if tagger.backend != "ram":
        return {"backend": tagger.backend}
    return {"backend": "ram", "checkpoint": weights_identity(tagger.ram_checkpoint), "variant": tagger.ram_variant}


def default_tagger() -> TaggerResource:
    ckpt = os.environ.get("SUBTEXT_RAM_CHECKPOINT", "")
    return TaggerResource(backend="ram" if ckpt else "yolo", ram_checkpoint=ckpt)


def resources() -> dict[str, TaggerResource]:
    return {"tagger": default_tagger()}
