"""Person (and object) detection with Ultralytics YOLO, batched, offline.

Three ways to get a model (``resolve_weights``):

* an absolute path to an existing ``.pt`` file: its sha256 is recorded on every row and must
  be pinned in the weights manifest (``config/weights.yaml``, which the user controls):
  Ultralytics checkpoints are whole pickled models that cannot load with torch's
  ``weights_only=True``, so unpinned bytes are never unpickled (docs/security.md). A file named
  like a manifest entry (``yolo11n.pt``) must match that entry's hash;
* an architecture file such as ``yolo11n.yaml``: the library builds the network with
  **random weights**. This exercises every code path (CI, the demo) but detects nothing
  meaningful; rows then say ``weights_kind = random_init`` and carry no hash;
* a bare model name (``yolo11n.pt``) for the library's own download, only when
  ``allow_download`` is true (a machine with internet).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from forge.models.weights import entry_for_file, is_trusted_pickle, load_manifest, manifest_path
from forge.provenance.versioning import sha256_file
from forge.vision.images import LoadedImage
from forge.vision.offline import import_ultralytics


def reference_weights() -> dict[str, tuple[int, str]]:
    """config/weights.yaml's COCO checkpoints: the only sizes / hashes a real copy of these files
    may have (read when asked, never at import)."""
    return {
        e.file: (int(e.bytes or 0), e.sha256) for e in load_manifest().values() if e.file.endswith(".pt") and e.sha256
    }


DETECTION_COLUMNS = [
    "frame_id",
    "batch",
    "det_index",
    "class_id",
    "class_name",
    "x1",
    "y1",
    "x2",
    "y2",
    "nx1",
    "ny1",
    "nx2",
    "ny2",
    "confidence",
    "model_name",
    "weights_kind",
    "weights_sha256",
]


class WeightsError(ValueError):
    """The configured weights cannot be used (missing, wrong hash, download not allowed)."""


@dataclass(frozen=True)
class WeightsSpec:
    source: str  # what the library is given: a path, a yaml name or a hub name
    kind: str  # file | random_init | download
    model_name: str
    sha256: str | None


def resolve_weights(weights: str, allow_download: bool = False) -> WeightsSpec:
    w = weights.strip()
    name = Path(w).name
    if w.endswith((".yaml", ".yml")):
        return WeightsSpec(source=w, kind="random_init", model_name=Path(name).stem, sha256=None)
    p = Path(w).expanduser()
    if p.is_absolute() or "/" in w:
        if not p.is_absolute():
            raise WeightsError(f"weights path must be absolute: {w!r}")
        if not p.is_file():
            raise WeightsError(f"weights file does not exist: {p}")
        digest = sha256_file(p)
        ref = entry_for_file(name)
        if ref is not None and ref.sha256 and digest != ref.sha256:
            raise WeightsError(
                f"{p} is named like the reference {name} but its sha256 {digest} (size {p.stat().st_size}) "
                f"differs from {ref.sha256} (size {ref.bytes}); refusing to unpickle it (see {manifest_path()})"
            )
        if not is_trusted_pickle(digest):
            raise WeightsError(
                f"{p} (sha256 {digest}) is not pinned in {manifest_path()}; a .pt checkpoint is a pickle that "
                "can run code when loaded, so it is loaded only when the weights manifest lists its sha256 "
                "(add an entry to trust this file)"
            )
        return WeightsSpec(source=str(p), kind="file", model_name=p.stem, sha256=digest)
    if not allow_download:
        raise WeightsError(
            f"{w!r} is neither an existing absolute path nor an architecture yaml; set allow_download=true "
            "on a machine with internet to let Ultralytics download it"
        )
    return WeightsSpec(source=w, kind="download", model_name=Path(name).stem, sha256=None)


def pick_device(device: str = "auto") -> str:
    if device != "auto":
        return device
    import torch

    return "cuda:0" if torch.cuda.is_available() else "cpu"


def coco_names() -> dict[int, str]:
    """The COCO class names Ultralytics ships (``cfg/datasets/coco.yaml``)."""
    from forge.storage.yaml_files import read_yaml

    ul = import_ultralytics()
    path = Path(ul.__file__).parent / "cfg" / "datasets" / "coco.yaml"
    return {int(k): str(v) for k, v in read_yaml(path)["names"].items()}


@dataclass
class Detection:
    class_id: int
    class_name: str
    x1: float
    y1: float
    x2: float
    y2: float
    confidence: float


@dataclass
class YoloDetector:
    """A loaded model plus its settings. Build once per process (see resources/detector.py)."""

    weights: str = "yolo11n.yaml"
    device: str = "auto"
    half: bool | None = None  # None: half precision on CUDA only
    conf: float = 0.25
    iou: float = 0.45
    imgsz: int = 640
    batch_size: int = 0  # 0 = auto: 16 on CUDA; 1 on CPU, where batching measured slower (docs/vision.md)
    max_det: int = 300
    classes: list[int] | None = None
    allow_download: bool = False
    spec: WeightsSpec = field(init=False)
    model: Any = field(init=False, repr=False)
    names: dict[int, str] = field(init=False)
    load_seconds: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        t0 = time.perf_counter()
        self.spec = resolve_weights(self.weights, self.allow_download)
        ul = import_ultralytics(allow_network=self.spec.kind == "download")
        self.device = pick_device(self.device)
        if self.half is None:
            self.half = self.device.startswith("cuda")
        if self.batch_size <= 0:
            self.batch_size = 16 if self.device.startswith("cuda") else 1
        self.model = ul.YOLO(self.spec.source, task="detect")
        names = dict(self.model.names)
        if self.spec.kind == "random_init" and len(names) == 80 and names.get(0) == "0":
            # The architecture yaml carries no names; it is the COCO-80 head, so use the
            # library's COCO vocabulary (class 0 = person) as the trained weights would.
            names = coco_names()
            self.model.model.names = names
        self.names = {int(k): str(v) for k, v in names.items()}
        self.model.to(self.device)
        self.load_seconds = time.perf_counter() - t0

    @property
    def person_class(self) -> int | None:
        return next((k for k, v in self.names.items() if v == "person"), None)

    @property
    def label(self) -> str:
        return f"{self.spec.model_name} ({self.spec.kind})"

    def predict_arrays(self, images: Sequence[np.ndarray]) -> list[Any]:
        """One forward pass per chunk of ``batch_size`` BGR arrays; returns Ultralytics Results."""
        import torch

        out: list[Any] = []
        # Ultralytics' select_device() sets torch to cpu_count-1 threads on CPU ("for training"),
        # i.e. ONE thread on a 2-core machine, for the rest of the process (OCR and every later
        # stage too). Give the process its threads back after each call.
        threads = torch.get_num_threads()
        try:
            for i in range(0, len(images), self.batch_size):
                chunk = list(images[i : i + self.batch_size])
                out += self.model.predict(
                    chunk,
                    conf=self.conf,
                    iou=self.iou,
                    imgsz=self.imgsz,
                    device=self.device,
                    quantize=16 if self.half else None,
                    max_det=self.max_det,
                    classes=self.classes,
                    batch=len(chunk),
                    verbose=False,
                    save=False,
                )
        finally:
            torch.set_num_threads(threads)
        return out

    def detect(self, images: Sequence[LoadedImage]) -> list[list[Detection]]:
        """Detections per image, boxes mapped back to the ORIGINAL pixel grid."""
        results = self.predict_arrays([im.bgr for im in images])
        return [parse_result(r, im.scale, im.orig_width, im.orig_height, self.names) for r, im in zip(results, images)]


def parse_result(result: Any, scale: float, width: int, height: int, names: dict[int, str]) -> list[Detection]:
    boxes = result.boxes
    if boxes is None or len(boxes) == 0:
        return []
    xyxy = boxes.xyxy.detach().float().cpu().numpy() * scale
    confs = boxes.conf.detach().float().cpu().numpy()
    cls = boxes.cls.detach().cpu().numpy().astype(int)
    return parse_boxes(xyxy, confs, cls, width, height, names)


def parse_boxes(
    xyxy: np.ndarray, confs: Iterable[float], cls: Iterable[int], width: int, height: int, names: dict[int, str]
) -> list[Detection]:
    """Clip to the image, drop degenerate boxes, and name the classes (vectorised: a frame can
    carry max_det = 300 boxes, and per-scalar numpy calls made this the GPU stage's bottleneck)."""
    b = np.clip(np.asarray(xyxy, dtype=float).reshape(-1, 4), 0, [width, height, width, height])
    keep = ((b[:, 2] - b[:, 0]) >= 1) & ((b[:, 3] - b[:, 1]) >= 1)
    confs = np.asarray(confs, dtype=float)[keep].tolist()
    cls = np.asarray(cls, dtype=int)[keep].tolist()
    return [
        Detection(k, names.get(k, str(k)), x1, y1, x2, y2, c)
        for (x1, y1, x2, y2), c, k in zip(b[keep].tolist(), confs, cls)
    ]


def detection_rows(
    frame_id: str, batch: str, dets: list[Detection], width: int, height: int, det: YoloDetector | WeightsSpec
) -> list[dict[str, Any]]:
    spec = det.spec if isinstance(det, YoloDetector) else det
    rows = []
    for i, d in enumerate(sorted(dets, key=lambda d: (-d.confidence, d.x1, d.y1))):
        rows.append(
            {
                "frame_id": frame_id,
                "batch": batch,
                "det_index": i,
                "class_id": d.class_id,
                "class_name": d.class_name,
                "x1": d.x1,
                "y1": d.y1,
                "x2": d.x2,
                "y2": d.y2,
                "nx1": d.x1 / width,
                "ny1": d.y1 / height,
                "nx2": d.x2 / width,
                "ny2": d.y2 / height,
                "confidence": d.confidence,
                "model_name": spec.model_name,
                "weights_kind": spec.kind,
                "weights_sha256": spec.sha256,
            }
        )
    return rows


def empty_detections() -> pd.DataFrame:
    return pd.DataFrame(columns=DETECTION_COLUMNS)
