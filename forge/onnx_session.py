"""A loaded PyTorch network run by ONNX Runtime on the CPU: ``net(x)`` in, the same tensors out.

On a CPU the convolutions of EasyOCR's CRAFT and of YOLO are nearly all of their stages' time,
and ONNX Runtime's kernels run them 1.6-2x faster than PyTorch's eager ones on the same cores
(docs/performance.md), with outputs equal to ~1e-5. The network is exported from the weights
already loaded (and sha256-verified) in this process, into memory, each time a model is
built: no derived file is written or read back, so nothing but the pinned weights reaches the
session. CPU only: on CUDA the torch modules stay.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence
from typing import Any


def cpu_threads() -> int:
    """The CPUs this process was given, as torch counts them (``OMP_NUM_THREADS`` in a Ray task)."""
    import torch

    return max(1, torch.get_num_threads())


class OnnxModule:
    """``net`` exported with one input whose batch, height and width may vary.

    Called with a torch tensor, returns a tuple of CPU torch tensors: the first ``n_outputs``
    outputs of the network's forward, in order."""

    engine = "onnx"

    def __init__(self, net: Any, example: Any, n_outputs: int = 1, threads: int | None = None) -> None:
        import onnxruntime as ort
        import torch

        buf = io.BytesIO()
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # the TorchScript exporter announces its deprecation
            torch.onnx.export(
                net.eval(),
                (example,),
                buf,
                input_names=["input"],
                dynamic_axes={"input": {0: "n", 2: "h", 3: "w"}},
                opset_version=17,
                dynamo=False,
            )
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or cpu_threads()
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(buf.getvalue(), opts, providers=["CPUExecutionProvider"])
        self.outputs: Sequence[str] = [o.name for o in self.session.get_outputs()[:n_outputs]]

    def __call__(self, x: Any) -> tuple[Any, ...]:
        import torch

        out = self.session.run(list(self.outputs), {"input": x.detach().cpu().float().numpy()})
        return tuple(torch.from_numpy(o) for o in out)
