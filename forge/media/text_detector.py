"""Which runtime executes EasyOCR's CRAFT text detector: ``torch`` (the library's module) or
``onnx`` (the same network and weights, exported to ONNX and run by ONNX Runtime).

On a CPU the detector's convolutions are nearly all of the text-ratio stage's time; ONNX Runtime
runs CRAFT ~1.6x faster than PyTorch's eager kernels on the same cores, score maps equal to ~1e-6
(docs/performance.md; export in memory from the verified weights: forge/models/onnx_session.py). On
CUDA the torch module stays (batched, on the GPU). ``auto`` = onnx on CPU, torch on CUDA.

``onnx-int8`` (opt-in, CPU): the same network with static int8 quantisation, calibrated at
start-up on fixed images (forge/media/ocr_calibration.py; ~10-20 s once per process), first
convolution and score head kept in fp32. About 1.9x ``onnx`` on the same cores, but its score
maps are not the fp32 ones: a box near a threshold can appear, vanish or move, so ratios differ
slightly (measured in docs/performance.md) and a frame near ``max_ratio`` can change side. It
is a deviation from the library's detector, for throughput on CPU; results computed with it are
cached apart from the exact engines'.

Only the detector changes: the recogniser, EasyOCR's pre- and post-processing (resize, score
thresholds, box linking) and ``readtext`` are the library's own.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from forge.models.onnx_session import OnnxModule, quantize_int8
from forge.models.protocols import OCRReader, TextDetectorEngine

DETECTOR_ENGINES = ("auto", "torch", "onnx", "onnx-int8")
EXACT_ENGINES = ("torch", "onnx")  # same score maps to ~1e-6: interchangeable results
log = logging.getLogger(__name__)


def resolve_detector_engine(engine: str, gpu: bool) -> str:
    if engine not in DETECTOR_ENGINES:
        raise ValueError(f"OCR detector_engine must be one of {DETECTOR_ENGINES}, not {engine!r}")
    if engine == "auto":
        return "torch" if gpu else "onnx"
    if engine.startswith("onnx") and gpu:
        raise ValueError(f"OCR detector_engine {engine!r} runs on the CPU; with gpu use 'torch' or 'auto'")
    return engine


class OnnxCraft(OnnxModule):
    """Callable like EasyOCR's CRAFT module: ``y, feature = net(x)``, torch tensors in and out."""

    def __init__(self, net: Any, threads: int | None = None) -> None:
        import torch

        net = getattr(net, "module", net)  # DataParallel on CUDA readers
        # EasyOCR pads every input to a multiple of 32; batch, height and width vary
        super().__init__(net, torch.zeros(1, 3, 64, 64), n_outputs=2, threads=threads)


def _craft_fp32_layers(convs: list[str]) -> list[str]:
    """CRAFT's convolutions kept in fp32: the first (raw pixels in) and the score head
    (``conv_cls``, ~1 % of the work): measured, most of int8's deviation otherwise."""
    return convs[:1] + [c for c in convs if "conv_cls" in c]


class _Recorded(Exception):
    """Raised by the recording detector: the input is all calibration needs."""


def calibration_inputs(reader: Any) -> list[Any]:
    """The tensors EasyOCR's own pre-processing feeds the detector for the calibration images
    (caught at the detector's door, so resize and normalisation are the library's)."""
    from forge.media.ocr import shrink
    from forge.media.ocr_calibration import CALIBRATION_SIDE, calibration_images

    seen: list[Any] = []

    def record(x: Any) -> Any:
        seen.append(x.detach().cpu().float().numpy().copy())
        raise _Recorded

    probe = copy.copy(reader)
    probe.detector = record
    for _, rgb in calibration_images():
        try:
            probe.detect(shrink(rgb, CALIBRATION_SIDE)[0], reformat=False)
        except _Recorded:
            pass
    return seen


class QuantizedCraft(OnnxModule):
    """``OnnxCraft`` with int8 convolutions (``quantize_int8``), calibrated on ``calibration_inputs``."""

    engine = "onnx-int8"

    def __init__(self, reader: Any, threads: int | None = None) -> None:
        import torch

        net = getattr(reader.detector, "module", reader.detector)
        inputs = calibration_inputs(reader)
        super().__init__(
            net,
            torch.zeros(1, 3, 64, 64),
            n_outputs=2,
            threads=threads,
            rewrite=lambda model: quantize_int8(model, inputs, keep_fp32=_craft_fp32_layers),
        )


def with_detector_engine(reader: OCRReader, engine: str, fallback: bool = False) -> Any:
    """``reader`` itself for ``torch``; for ``onnx`` (``onnx-int8``) a shallow copy whose
    ``detector`` is an ``OnnxCraft`` (``QuantizedCraft``) of the same weights (recogniser and
    settings shared with ``reader``).
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
    if engine not in ("onnx", "onnx-int8"):
        raise ValueError(f"resolve the OCR detector engine first (torch, onnx or onnx-int8), not {engine!r}")
    if reader.detect_network != "craft":
        raise ValueError(f"the {engine} detector engine runs CRAFT, not {reader.detect_network!r}")
    fast = copy.copy(reader)
    fast.detector = OnnxCraft(reader.detector) if engine == "onnx" else QuantizedCraft(reader)
    return fast


def detector_engine_of(reader: OCRReader) -> str:
    return detector_identity(reader)[0]


def detector_identity(reader: OCRReader) -> tuple[str, str]:
    """``(engine, sha256 of the ONNX graph it runs)`` of a reader's detector ("" for torch)."""
    det = reader.detector
    return (det.engine, det.sha256) if isinstance(det, TextDetectorEngine) else ("torch", "")
