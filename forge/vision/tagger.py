"""Object tags per frame, from one of two backends.

* ``yolo``: the detector's class names with counts (``tags_from_detections``). Works with
  any Ultralytics weights; a model with a richer vocabulary (e.g. Open Images V7, 601
  classes) gives richer tags. Score = the highest confidence of that class in the frame.
* ``ram``: Recognize-Anything (RAM, ``ram.models.ram``; RAM++, ``ram.models.ram_plus``),
  an optional extra (``pip install git+https://github.com/xinyu1205/recognize-anything``)
  loaded once per process from a configured checkpoint. Tags are the classes whose
  sigmoid score passes RAM's own per-class thresholds, with that score. On Ray (``scale``),
  each tagging actor loads it once (``forge.scale.ray_pool.TaggingWorker``).
  NOT verified on real weights here: no RAM checkpoint can be obtained on these machines.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from forge.provenance.versioning import sha256_file
from forge.vision.images import LoadedImage

TAG_COLUMNS = ["frame_id", "batch", "tag", "score", "count", "backend", "model_version"]


def tags_from_detections(det: pd.DataFrame, model_version: str) -> pd.DataFrame:
    """One row per (frame, class name): count of boxes and max confidence."""
    if det.empty:
        return pd.DataFrame(columns=TAG_COLUMNS)
    g = (
        det.groupby(["frame_id", "batch", "class_name"], as_index=False)
        .agg(score=("confidence", "max"), count=("confidence", "size"))
        .rename(columns={"class_name": "tag"})
    )
    g["backend"] = "yolo"
    g["model_version"] = model_version
    return g.sort_values(["frame_id", "count", "tag"], ascending=[True, False, True])[TAG_COLUMNS].reset_index(
        drop=True
    )


class RamUnavailable(RuntimeError):
    """The optional ``ram`` package or its checkpoint is missing."""


@dataclass
class RamTagger:
    checkpoint: str
    variant: str = "ram"  # ram | ram_plus
    vit: str = "swin_l"
    image_size: int = 384
    device: str = "auto"
    batch_size: int = 8
    model: Any = field(init=False, repr=False)
    tag_list: np.ndarray = field(init=False, repr=False)
    model_version: str = field(init=False)
    load_seconds: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        try:
            import ram.models as ram_models  # optional extra
            from ram import get_transform
        except ImportError as exc:
            raise RamUnavailable(
                "the `ram` package is not installed: pip install git+https://github.com/xinyu1205/recognize-anything"
            ) from exc
        ckpt = Path(self.checkpoint)
        if not ckpt.is_absolute() or not ckpt.is_file():
            raise RamUnavailable(f"RAM checkpoint must be an existing absolute path, got {self.checkpoint!r}")
        import torch

        from forge.vision.detector import pick_device

        t0 = time.perf_counter()
        self.device = pick_device(self.device)
        build = getattr(ram_models, self.variant)
        self.model = build(pretrained=str(ckpt), image_size=self.image_size, vit=self.vit).eval().to(self.device)
        if self.device.startswith("cuda"):
            self.model = self.model.half()
        self._transform = get_transform(image_size=self.image_size)
        self._torch = torch
        self.tag_list = np.asarray(self.model.tag_list)
        self.model_version = f"{self.variant}-{self.vit}@{sha256_file(ckpt)[:12]}"
        self.load_seconds = time.perf_counter() - t0

    def _logits(self, x: Any) -> Any:
        # Mirrors RAM.generate_tag: image embeddings -> tagging head over label queries -> fc.
        m, torch = self.model, self._torch
        label_embed = torch.nn.functional.relu(m.wordvec_proj(m.label_embed))
        image_embeds = m.image_proj(m.visual_encoder(x))
        image_atts = torch.ones(image_embeds.size()[:-1], dtype=torch.long, device=x.device)
        label_embed = label_embed.unsqueeze(0).repeat(image_embeds.shape[0], 1, 1)
        tagging = m.tagging_head(
            encoder_embeds=label_embed,
            encoder_hidden_states=image_embeds,
            encoder_attention_mask=image_atts,
            return_dict=False,
            mode="tagging",
        )
        return m.fc(tagging[0]).squeeze(-1)

    def tag(self, images: Sequence[LoadedImage]) -> list[list[tuple[str, float]]]:
        from PIL import Image

        torch, out = self._torch, []
        thresholds = self.model.class_threshold.to(self.device).float()
        deleted = set(getattr(self.model, "delete_tag_index", []) or [])
        for i in range(0, len(images), self.batch_size):
            chunk = images[i : i + self.batch_size]
            x = torch.stack([self._transform(Image.fromarray(im.rgb)) for im in chunk]).to(self.device)
            if self.device.startswith("cuda"):
                x = x.half()
            with torch.inference_mode():
                probs = torch.sigmoid(self._logits(x).float())
                keep = (probs > thresholds).cpu().numpy()
                probs = probs.cpu().numpy()
            for b in range(len(chunk)):
                idx = [j for j in np.flatnonzero(keep[b]) if j not in deleted]
                out.append(sorted(((str(self.tag_list[j]), float(probs[b, j])) for j in idx), key=lambda t: -t[1]))
        return out


def ram_rows(frame_id: str, batch: str, tags: list[tuple[str, float]], model_version: str) -> list[dict]:
    return [
        {
            "frame_id": frame_id,
            "batch": batch,
            "tag": t,
            "score": s,
            "count": 1,
            "backend": "ram",
            "model_version": model_version,
        }
        for t, s in tags
    ]
