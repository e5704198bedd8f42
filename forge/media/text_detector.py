"""Which runtime executes EasyOCR's CRAFT text detector: ``torch`` (the library's module) or
``onnx`` (the same network and weights, exported to ONNX and run by ONNX Runtime).

On a CPU the detector's convolutions are nearly all of the text-ratio stage's time, and ONNX
Runtime's kernels run CRAFT ~1.6x faster than PyTorch's eager ones on the same cores, with score
maps equal to ~1e-6 (docs/performance.md). The network is exported from the loaded, sha256-verified
weights in memory each time a reader is built (~3 s on 2 cores); no derived file is written or
read back, so nothing but the pinned weights can reach the session. On CUDA the torch module
stays (batched, on the GPU). ``auto`` = onnx on CPU, torch on CUDA.

Only the detector changes: the recogniser, EasyOCR's pre- and post-processing (resize, score
thresholds, box linking) and ``readtext`` are the library's own.
"""

from __future__ import annotations

import copy
import io
import warnings
from typing import Any

DETECTOR_ENGINES = ("auto", "torch", "onnx")


def resolve_detector_engine(engine: str, gpu: bool) -> str:
    if engine not in DETECTOR_ENGINES:
        raise ValueError(f"OCR detector_engine must be one of {DETECTOR_ENGINES}, not {engine!r}")
    if engine == "auto":
        return "torch" if gpu else "onnx"
    if engine == "onnx" and gpu:
        raise ValueError("OCR detector_engine 'onnx' runs on the CPU; with gpu use 'torch' or 'auto'")
    return engine


def _threads() -> int:
    """The CPUs this process was given, as torch counts them (``OMP_NUM_THREADS`` in a Ray task)."""
    import torch

    return max(1, torch.get_num_threads())


class OnnxCraft:
    """Callable like EasyOCR's CRAFT module (``y, feature = net(x)``, torch tensors in and out)."""

    engine = "onnx"

    def __init__(self, net: Any, threads: int | None = None) -> None:
        import onnxruntime as ort
        import torch

        net = getattr(net, "module", net).eval()  # DataParallel on CUDA readers
        buf = io.BytesIO()
        with warnings.catch_warnings(), torch.no_grad():
            # the TorchScript exporter announces its deprecation; the graph is checked below
            warnings.simplefilter("ignore")
            torch.onnx.export(
                net,
                (torch.zeros(1, 3, 64, 64),),
                buf,
                input_names=["image"],
                output_names=["scores", "features"],
                # EasyOCR pads every input to a multiple of 32; height, width and batch vary
                dynamic_axes={
                    "image": {0: "n", 2: "h", 3: "w"},
                    "scores": {0: "n", 1: "h2", 2: "w2"},
                    "features": {0: "n", 2: "h2", 3: "w2"},
                },
                opset_version=17,
                dynamo=False,
            )
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or _threads()
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(buf.getvalue(), opts, providers=["CPUExecutionProvider"])
        self.threads = opts.intra_op_num_threads

    def __call__(self, x: Any) -> tuple[Any, Any]:
        import torch

        scores, features = self.session.run(None, {"image": x.detach().cpu().numpy()})
        return torch.from_numpy(scores), torch.from_numpy(features)

    def eval(self) -> OnnxCraft:
        return self


def with_detector_engine(reader: Any, engine: str) -> Any:
    """``reader`` itself for ``torch``; for ``onnx`` a shallow copy whose ``detector`` is an
    ``OnnxCraft`` of the same weights (recogniser and settings shared with ``reader``)."""
    if engine == "torch":
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
