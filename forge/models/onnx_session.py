"""A loaded PyTorch network run by ONNX Runtime on the CPU: ``net(x)`` in, the same tensors out.

On a CPU the convolutions of EasyOCR's CRAFT and of YOLO are nearly all of their stages' time,
and ONNX Runtime's kernels run them 1.6-2x faster than PyTorch's eager ones on the same cores
(docs/performance.md), with outputs equal to ~1e-5. The network is exported from the weights
already loaded (and sha256-verified) in this process, into memory, each time a model is
built: no derived file is written or read back, so nothing but the pinned weights reaches the
session. CPU only: on CUDA the torch modules stay.

ONNX Runtime's PyPI build has telemetry on: a few seconds after the first session it writes
``~/.cache/Microsoft/DeveloperTools/.onnxruntime/`` and resolves a Microsoft events host.
``ORT_DISABLE_TELEMETRY=1`` (forge/models/offline_env.py), read when its environment is created with
the first session, stops both; every session here is created after it is set.
"""

from __future__ import annotations

import hashlib
import io
import tempfile
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from forge.models.offline_env import apply as apply_offline_env


def onnxruntime() -> Any:
    """The ``onnxruntime`` module, with the offline opt-outs set first (an explicit value kept)."""
    apply_offline_env()
    import onnxruntime as ort

    return ort


def cpu_threads() -> int:
    """The CPUs this process was given, as torch counts them (``OMP_NUM_THREADS`` in a Ray task)."""
    import torch

    return max(1, torch.get_num_threads())


class OnnxModule:
    """``net`` exported with one input whose batch, height and width may vary.

    Called with a torch tensor, returns a tuple of CPU torch tensors: the first ``n_outputs``
    outputs of the network's forward, in order."""

    engine = "onnx"

    def __init__(
        self,
        net: Any,
        example: Any,
        n_outputs: int = 1,
        threads: int | None = None,
        rewrite: Callable[[bytes], bytes] | None = None,
    ) -> None:
        ort = onnxruntime()
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
        model = rewrite(buf.getvalue()) if rewrite else buf.getvalue()  # e.g. quantize_int8
        self.sha256 = hashlib.sha256(model).hexdigest()  # of the graph the session runs
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or cpu_threads()
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        self.outputs: Sequence[str] = [o.name for o in self.session.get_outputs()[:n_outputs]]

    def __call__(self, x: Any) -> tuple[Any, ...]:
        import torch

        out = self.session.run(list(self.outputs), {"input": x.detach().cpu().float().numpy()})
        return tuple(torch.from_numpy(o) for o in out)


def quantize_int8(
    model: bytes, inputs: Iterable[Any], keep_fp32: Callable[[list[str]], Iterable[str]] = lambda convs: ()
) -> bytes:
    """``model`` (one input, named ``input``) with static int8 quantisation: activation ranges
    from running it on ``inputs`` (min/max), weights int8 per output channel, activations uint8.

    ``reduce_range`` (7-bit weights): x86 int8 kernels without VNNI can saturate 8-bit products,
    so results would depend on the CPU's instruction set; with 7-bit weights they never do.
    ``keep_fp32(conv_node_names)`` names convolutions left in fp32 (the layers whose rounding
    moves the outputs most). Runs ONNX Runtime's calibration (seconds per input);
    working files go to a private temporary directory, removed afterwards."""
    import onnx

    onnxruntime()  # the opt-outs before calibration builds its sessions
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class _Feed(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(inputs)

        def get_next(self) -> dict[str, Any] | None:
            x = next(self.it, None)
            return None if x is None else {"input": x}

    with tempfile.TemporaryDirectory(prefix="subtext_int8_") as tmp:
        src, pre, out = (Path(tmp) / f"{n}.onnx" for n in ("fp32", "pre", "int8"))
        src.write_bytes(model)
        quant_pre_process(str(src), str(pre), skip_symbolic_shape=True)  # shape inference + fusions
        convs = [n.name for n in onnx.load(str(pre)).graph.node if n.op_type == "Conv"]
        quantize_static(
            str(pre),
            str(out),
            _Feed(),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            reduce_range=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            nodes_to_exclude=list(keep_fp32(convs)),
            calibrate_method=CalibrationMethod.MinMax,
        )
        return out.read_bytes()
