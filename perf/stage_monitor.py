"""Samples taken while a benchmarked stage runs: GPU utilisation (pynvml, else nvidia-smi; the
SMs' and the hardware JPEG engines'), this process's resident memory, and CUDA's peak allocation.

    with StageMonitor() as m:
        run_stage()
    print(m.summary())
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time


def _rss_bytes() -> int:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _Gpu:
    """``utilization.gpu`` is the share of time some kernel ran on the SMs. JPEGs decoded on the
    device run on A100/H100/H200's hardware JPEG engines (torchvision uses nvjpeg's hardware
    backend there), which that figure leaves out, so their utilisation is sampled as well
    (``None`` where the GPU or driver has no such engine)."""

    def __init__(self) -> None:
        self.handle, self.exe, self.jpeg = None, None, True
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml, self.handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:  # noqa: BLE001 - no NVML (no GPU, no driver): fall back to nvidia-smi
            self.exe = shutil.which("nvidia-smi")

    def sample(self) -> tuple[int | None, int | None]:
        """(SM utilisation %, JPEG engine utilisation %)."""
        if self.handle is not None:
            gpu, jpg = int(self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu), None
            if self.jpeg:
                try:
                    jpg = int(self.nvml.nvmlDeviceGetJpgUtilization(self.handle)[0])
                except Exception:  # noqa: BLE001 - no JPEG engine / older NVML: SM figure only
                    self.jpeg = False
            return gpu, jpg
        if self.exe:
            fields = "utilization.gpu,utilization.jpeg" if self.jpeg else "utilization.gpu"
            res = subprocess.run(
                [self.exe, f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                timeout=5,
            )
            if res.returncode != 0 and self.jpeg:  # a driver that does not know utilization.jpeg
                self.jpeg = False
                return self.sample()
            line = res.stdout.strip().splitlines()[0] if res.stdout.strip() else ""
            vals = [int(v) if v.strip().isdigit() else None for v in line.split(",")] if line else []
            return (vals[0] if vals else None), (vals[1] if len(vals) > 1 else None)
        return None, None


class StageMonitor:
    def __init__(self, every: float = 0.1) -> None:
        import torch

        self.cuda = torch.cuda.is_available()
        self.every, self.util, self.jpeg, self.rss = every, [], [], []
        self._stop = threading.Event()
        self._gpu = _Gpu() if self.cuda else None
        self.cuda_peak = 0
        self.seconds = 0.0

    def _run(self) -> None:
        while not self._stop.is_set():
            self.rss.append(_rss_bytes())
            if self._gpu is not None:
                try:
                    u, j = self._gpu.sample()
                    if u is not None:
                        self.util.append(u)
                    if j is not None:
                        self.jpeg.append(j)
                except Exception:  # noqa: BLE001 - sampling is best effort; the benchmark still prints
                    self._gpu = None
            time.sleep(self.every)

    def __enter__(self) -> StageMonitor:
        import torch

        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t0 = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        import torch

        if self.cuda:
            torch.cuda.synchronize()
            self.cuda_peak = torch.cuda.max_memory_allocated()
        self.seconds = time.perf_counter() - self._t0
        self._stop.set()
        self._thread.join()

    def summary(self) -> str:
        parts = [f"peak RSS {max(self.rss, default=_rss_bytes()) / 2**20:.0f} MiB"]
        if self.cuda:
            parts.append(f"CUDA peak {self.cuda_peak / 2**20:.0f} MiB")
            parts.append(
                f"GPU util mean {sum(self.util) / len(self.util):.0f}% max {max(self.util)}% ({len(self.util)} samples)"
                if self.util
                else "GPU util: no pynvml / nvidia-smi"
            )
            if self.jpeg:
                parts.append(f"JPEG engines util mean {sum(self.jpeg) / len(self.jpeg):.0f}% max {max(self.jpeg)}%")
        return ", ".join(parts)
