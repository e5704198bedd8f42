"""YOLO detector resource: configuration plus a model loaded once per process.

Default weights are ``yolo11n.yaml``, Ultralytics' architecture file: RANDOM weights, which
exercise the whole path but detect nothing meaningful. Point ``SUBTEXT_YOLO_WEIGHTS`` (or the
``weights`` field) at a real ``yolo11n.pt`` (absolute path; its sha256 must be pinned in config/weights.yaml)
for real detections.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import dagster as dg
from pydantic import Field, PrivateAttr

from forge.models.weights import weights_identity
from forge.scale.ray_pool import configured_scale
from forge.vision.detector import YoloDetector
from forge.vision.fast_detect import TensorDetector, expected_setup, with_engine
from forge.vision.settings import vision_default

# One model per distinct configuration per process: several assets (and runs, with the
# in-process executor) share it instead of re-loading weights.
_CACHE: dict[tuple, YoloDetector | TensorDetector] = {}
_LOCK = threading.Lock()


def _scale_default(key: str, fallback: Any, cast: type) -> Any:
    """A Ray field whose default is config/vision.yaml ``scale.<key>`` ($SUBTEXT_RAY_ADDRESS for the
    address), read when the resource is built, not when this module is imported."""

    def read() -> Any:
        value = configured_scale().get(key)
        return cast(fallback if value is None else value)

    return Field(default_factory=read)


class DetectorResource(dg.ConfigurableResource):
    """Ultralytics YOLO for persons and objects (batched; CUDA + fp16 when present)."""

    weights: str = "yolo11n.yaml"
    device: str = "auto"
    half: bool | None = None
    # conf / iou / imgsz / engine / ray_*: defaults from config/vision.yaml (``detection:``,
    # ``scale:``), read when the resource is built, so editing them changes code versions
    conf: float = vision_default("detection", "conf", 0.25, float)
    iou: float = vision_default("detection", "iou", 0.45, float)
    imgsz: int = vision_default("detection", "imgsz", 640, int)
    batch_size: int = 0  # 0 = auto (16 on CUDA, 1 on CPU)
    allow_download: bool = False
    decode_workers: int = 4
    max_side: int = 1920
    # "tensor": forge.vision.fast_detect (letterbox + batched NMS on the model's device); "onnx":
    # the same with the network on ONNX Runtime (CPU); "ultralytics": the library's predict;
    # "auto": tensor on CUDA, onnx on CPU.
    engine: str = vision_default("detection", "engine", "ultralytics", str)
    # engine tensor: decode plain JPEGs on the model's device (nvjpeg on CUDA; the CPU decoder for
    # everything else). None = on CUDA only; False = CPU decode threads always.
    device_decode: bool | None = None
    # Ray (forge/scale/ray_pool.py): "" = in-process; "ray://head:10001", "host:6379", "auto" or
    # "local". Default: $SUBTEXT_RAY_ADDRESS, else config/vision.yaml scale.ray_address.
    ray_address: str = _scale_default("ray_address", "", str)
    ray_actors: int = _scale_default("actors", 2, int)
    ray_num_cpus: float = _scale_default("num_cpus", 1, float)
    ray_num_gpus: float = _scale_default("num_gpus", 0, float)
    ray_shard_frames: int = _scale_default("shard_frames", 32, int)

    _detector: YoloDetector | TensorDetector | None = PrivateAttr(default=None)

    def _key(self) -> tuple:
        return (
            self.weights,
            self.device,
            self.half,
            self.conf,
            self.iou,
            self.imgsz,
            self.batch_size,
            self.allow_download,
            self.engine,
            self.device_decode,
        )

    def get(self) -> YoloDetector | TensorDetector:
        if self._detector is None and self.ray_address:
            from forge.scale.ray_pool import RayPlacement
            from forge.vision.detect_worker import RemoteDetector

            kwargs = {
                "weights": self.weights,
                "device": self.device,
                "half": self.half,
                "conf": self.conf,
                "iou": self.iou,
                "imgsz": self.imgsz,
                "batch_size": self.batch_size,
                "allow_download": self.allow_download,
            }
            placement = RayPlacement(
                self.ray_address, self.ray_actors, self.ray_num_cpus, self.ray_num_gpus, self.ray_shard_frames
            )
            self._detector = RemoteDetector(kwargs, self.engine, placement, self.device_decode)  # type: ignore[assignment]
        if self._detector is None:
            with _LOCK:
                det = _CACHE.get(self._key())
                if det is None:
                    det = YoloDetector(
                        weights=self.weights,
                        device=self.device,
                        half=self.half,
                        conf=self.conf,
                        iou=self.iou,
                        imgsz=self.imgsz,
                        batch_size=self.batch_size,
                        allow_download=self.allow_download,
                    )
                    det = with_engine(det, self.engine, self.device_decode)
                    _CACHE[self._key()] = det
            self._detector = det
        return self._detector

    def expected_setup(self) -> dict[str, object]:
        """Engine, device kind, fp16 and decode path this configuration will run, known before
        any model is loaded (``forge.vision.fast_detect.expected_setup``); on Ray the replicas'
        (device ``auto`` = CUDA when they are given GPUs)."""
        device = self.device
        if self.ray_address and device == "auto":
            device = "cuda" if self.ray_num_gpus > 0 else "cpu"
        return expected_setup(self.engine, device, self.half, self.device_decode)

    def model_version(self) -> dict[str, object]:
        """What decides the boxes (weights, thresholds, input size): part of the code version of
        the assets that run this detector, so swapping weights or ``conf`` marks them changed."""
        return {
            "weights": weights_identity(self.weights),
            "conf": self.conf,
            "iou": self.iou,
            "imgsz": self.imgsz,
        }

    @property
    def is_random(self) -> bool:
        return self.weights.strip().endswith((".yaml", ".yml"))


def default_detector() -> DetectorResource:
    return DetectorResource(weights=os.environ.get("SUBTEXT_YOLO_WEIGHTS", "yolo11n.yaml"))


def resources() -> dict[str, DetectorResource]:
    return {"detector": default_detector()}
