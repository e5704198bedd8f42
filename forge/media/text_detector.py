"""Which runtime executes EasyOCR's CRAFT text detector: ``torch`` (the library's module) or
``onnx`` (the same network and weights, exported to ONNX and run by ONNX Runtime).

On a CPU the detector's convolutions are nearly all of the text-ratio stage's time; ONNX Runtime
runs CRAFT ~1.6x faster than PyTorch's eager kernels on the same cores, score maps equal to ~1e-6
(docs/performance.md; export in memory from the verified weights: forge/onnx_session.py). On
CUDA the torch module stays (batched, on the GPU). ``auto`` = onnx on CPU, torch on CUDA.

Only the detector changes: the recogniser, EasyOCR's pre- and post-processing (resize, score
thresholds, box linking) and ``readtext`` are the library's own.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from forge.onnx_session import OnnxModule

DETECTOR_ENGINES = ("auto", "torch", "onnx")
log = logging.getLogger(__name__)


def resolve_detector_engine(engine: str, gpu: bool) -> str:
    if engine not in DETECTOR_ENGINES:
        raise ValueError(f"OCR detector_engine must be one of {DETECTOR_ENGINES}, not {engine!r}")
    if engine == "auto":
        return "torch" if gpu else "onnx"
    if engine == "onnx" and gpu:
        raise ValueError("OCR detector_engine 'onnx' runs on the CPU; with gpu use 'torch' or 'auto'")
    return engine


class OnnxCraft(OnnxModule):
    """Callable like EasyOCR's CRAFT module: ``y, feature = net(x)``, torch tensors in and out."""

    def __init__(self, net: Any, threads: int | None = None) -> None:
        import torch

        net = getattr(net, "module", net)  # DataParallel on CUDA readers
        # EasyOCR pads every input to a multiple of 32; batch, height and width vary
        super().__init__(net, torch.zeros(1, 3, 64, 64), n_outputs=2, threads=threads)


def with_detector_engine(reader: Any, engine: str, fallback: bool = False) -> Any:
    """``reader`` itself for ``torch``; for ``onnx`` a shallow copy whose ``detector`` is an
    ``OnnxCraft`` of the same weights (recogniser and settings shared with ``reader``).
    ``fallback`` (engine ``auto``): if ONNX Runtime cannot run it, warn and keep ``reader``."""
    if engine == "torch":
        return reader
    if fallback:
        try:
            return with_detector_engine(reader, engine)
        except Exception as exc:  # noqa: BLE001 - the library's detector still works
            log.warning(
                "OCR detector_engine auto: ONNX Runtime unavailable (%s: %s); using torch", type(exc).__name__, exc
            )
            return reader
    if engine != "onnx":
        raise ValueError(f"resolve the OCR detector engine first (torch or onnx), not {engine!r}")
    if getattr(reader, "detect_network", "craft") != "craft":
        raise ValueError(f"the onnx detector engine runs CRAFT, not {reader.detect_network!r}")
    fast = copy.copy(reader)
    fast.detector = OnnxCraft(reader.detector)
    return fast


def detector_engine_of(reader: Any) -> str:
    return getattr(getattr(reader, "detector", None), "engine", "torch")
