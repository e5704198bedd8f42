"""YOLO detector resource: configuration plus a model loaded once per process.

Default weights are ``yolo11n.yaml``, Ultralytics' architecture file: RANDOM weights, which
exercise the whole path but detect nothing meaningful. Point ``SUBTEXT_YOLO_WEIGHTS`` (or the
``weights`` field) at a real ``yolo11n.pt`` (absolute path; its sha256 must be pinned in config/weights.yaml)
for real detections.
"""

from __future__ import annotations

import os
import threading
from typing import Optional

import dagster as dg
from pydantic import PrivateAttr

from forge.vision.detector import YoloDetector

# One model per distinct configuration per process: several assets (and runs, with the
# in-process executor) share it instead of re-loading weights.
_CACHE: dict[tuple, YoloDetector] = {}
_LOCK = threading.Lock()


class DetectorResource(dg.ConfigurableResource):
    """Ultralytics YOLO for persons and objects (batched; CUDA + fp16 when present)."""

    weights: str = "yolo11n.yaml"
    device: str = "auto"
    half: Optional[bool] = None
    conf: float = 0.25
    iou: float = 0.45
    imgsz: int = 640
    batch_size: int = 0  # 0 = auto (16 on CUDA, 1 on CPU)
    allow_download: bool = False
    decode_workers: int = 4
    max_side: int = 1920

    _detector: Optional[YoloDetector] = PrivateAttr(default=None)

    def _key(self) -> tuple:
        return (self.weights, self.device, self.half, self.conf, self.iou, self.imgsz, self.batch_size, self.allow_download)

    def get(self) -> YoloDetector:
        if self._detector is None:
            with _LOCK:
                det = _CACHE.get(self._key())
                if det is None:
                    det = YoloDetector(
                        weights=self.weights, device=self.device, half=self.half, conf=self.conf, iou=self.iou,
                        imgsz=self.imgsz, batch_size=self.batch_size, allow_download=self.allow_download,
                    )
                    _CACHE[self._key()] = det
            self._detector = det
        return self._detector

    @property
    def is_random(self) -> bool:
        return self.weights.strip().endswith((".yaml", ".yml"))


def default_detector() -> DetectorResource:
    return DetectorResource(weights=os.environ.get("SUBTEXT_YOLO_WEIGHTS", "yolo11n.yaml"))


RESOURCES = {"detector": default_detector()}
