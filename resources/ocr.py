"""The ``ocr`` resource: EasyOCR for the text-area-ratio filter, from pinned, verified weights
(readers are built and cached per process by forge/media/ocr_reader.py; never downloads)."""

import os
from typing import Any

import dagster as dg
import numpy as np
from pydantic import PrivateAttr

from forge.media.ocr import OCRResult, ocr_frame
from forge.media.ocr_reader import build_reader
from forge.media.text_detector import detector_identity


class OCRResource(dg.ConfigurableResource):
    """EasyOCR text detection + recognition for the text-area-ratio filter."""

    languages: list[str] = ["en"]
    model_dir: str = ""  # "" → $SUBTEXT_MODELS_DIR/easyocr, else the registry package; always verified
    gpu: bool | None = None  # None → use CUDA when torch sees a GPU
    max_side: int = 960  # frames are shrunk to this longer side before OCR (CPU cost ~ pixels)
    # What runs the text detector in the text-ratio stage (method: detect): "onnx" = ONNX Runtime
    # on the CPU (~1.6x PyTorch there, same scores to ~1e-6), "torch" = EasyOCR's own module,
    # "auto" = onnx on CPU, torch on CUDA; "onnx-int8" = opt-in int8 CRAFT on the CPU (~1.9x onnx, ratios
    # within the tolerance in docs/performance.md, not equal). readtext (method: readtext, read()) is
    # always the library's.
    detector_engine: str = "auto"

    _reader: Any = PrivateAttr(default=None)
    _detect_reader: Any = PrivateAttr(default=None)
    _remote_engines: set = PrivateAttr(default_factory=set)

    def use_gpu(self) -> bool:
        if self.gpu is not None:
            return self.gpu
        import torch

        return bool(torch.cuda.is_available())

    def reader(self) -> Any:
        if self._reader is None:
            self._reader = build_reader(tuple(self.languages), self.model_dir, self.use_gpu())
        return self._reader

    def detect_reader(self) -> Any:
        """The reader whose ``detect`` the text-ratio stage calls (engine per ``detector_engine``)."""
        if self._detect_reader is None:
            self._detect_reader = build_reader(
                tuple(self.languages), self.model_dir, self.use_gpu(), self.detector_engine
            )
        return self._detect_reader

    def note_remote_engines(self, engines: set[tuple[str, str]]) -> None:
        """``(engine, graph digest)`` of the Ray replicas that measured frames for this resource."""
        self._remote_engines |= engines

    def _detector_runs(self) -> set[tuple[str, str]]:
        """``(engine, graph digest)`` of every reader that ran the detector: here and on Ray replicas."""
        runs = set(self._remote_engines)
        if self._detect_reader is not None:
            runs.add(detector_identity(self._detect_reader))
        return runs

    def detector_engine_used(self) -> str | None:
        """What ran the text detector, here or on Ray replicas (None: no frame needed it)."""
        return ", ".join(sorted({e for e, _ in self._detector_runs()})) or None

    def detector_graph_sha256(self) -> str | None:
        """sha256 of the ONNX graph(s) that ran the detector (torch has none); None if none ran."""
        return ", ".join(sorted({d for _, d in self._detector_runs() if d})) or None

    def read(self, rgb: np.ndarray) -> OCRResult:
        return ocr_frame(self.reader(), rgb, max_side=self.max_side)


# SUBTEXT_OCR_DETECTOR_ENGINE picks the engine for CLI builds too (e.g. onnx-int8); "" = auto
def resources() -> dict[str, OCRResource]:
    return {"ocr": OCRResource(detector_engine=os.environ.get("SUBTEXT_OCR_DETECTOR_ENGINE") or "auto")}
