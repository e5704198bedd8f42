"""EasyOCR, loaded once per process, from a configured weights directory.

``model_dir`` defaults to ``$SUBTEXT_MODELS_DIR/easyocr`` (the shared, checksummed copy;
see shared/models/MANIFEST.md). With a directory configured, downloads are disabled: a
missing or corrupt file raises instead of fetching. Set ``model_dir=""`` (or leave
``SUBTEXT_MODELS_DIR`` unset) on a machine with internet to let EasyOCR download its
own weights into its default place.
"""


import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import dagster as dg
import numpy as np
from pydantic import PrivateAttr

from forge.media.ocr import OCRResult, ocr_frame

_READERS: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def default_model_dir() -> str:
    base = os.environ.get("SUBTEXT_MODELS_DIR", "")
    return str(Path(base) / "easyocr") if base else ""


def build_reader(languages: tuple[str, ...], model_dir: str, gpu: bool, user_network_dir: str) -> Any:
    """One ``easyocr.Reader`` per (languages, weights, device) per process.

    Building one loads ~100 MB of weights (seconds); several resource instances in one
    process (tests, the in-process executor) share it.
    """
    key = (languages, model_dir, gpu, user_network_dir)
    with _LOCK:
        if key not in _READERS:
            import easyocr  # heavy import, only when OCR actually runs

            Path(user_network_dir).mkdir(parents=True, exist_ok=True)
            kwargs: dict[str, Any] = {"gpu": gpu, "user_network_directory": user_network_dir, "verbose": False}
            if model_dir:
                if not Path(model_dir).is_dir():
                    raise FileNotFoundError(f"EasyOCR model_dir {model_dir!r} does not exist")
                kwargs.update(model_storage_directory=model_dir, download_enabled=False)
            _READERS[key] = easyocr.Reader(list(languages), **kwargs)
        return _READERS[key]


class OCRResource(dg.ConfigurableResource):
    """EasyOCR text detection + recognition for the text-area-ratio filter."""

    languages: list[str] = ["en"]
    model_dir: str = ""  # "" → EasyOCR downloads its own weights (needs internet)
    gpu: bool | None = None  # None → use CUDA when torch sees a GPU
    max_side: int = 960  # frames are shrunk to this longer side before OCR (CPU cost ~ pixels)
    user_network_dir: str = ""  # "" → a folder in the temp dir, never $HOME

    _reader: Any = PrivateAttr(default=None)

    def use_gpu(self) -> bool:
        if self.gpu is not None:
            return self.gpu
        import torch

        return bool(torch.cuda.is_available())

    def reader(self) -> Any:
        if self._reader is None:
            net = self.user_network_dir or str(Path(tempfile.gettempdir()) / "subtext_easyocr_user_network")
            self._reader = build_reader(tuple(self.languages), self.model_dir, self.use_gpu(), net)
        return self._reader

    def read(self, rgb: np.ndarray) -> OCRResult:
        return ocr_frame(self.reader(), rgb, max_side=self.max_side)


RESOURCES = {"ocr": OCRResource(model_dir=default_model_dir())}
