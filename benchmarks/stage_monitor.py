"""Samples taken while a benchmarked stage runs: GPU utilisation (pynvml, else nvidia-smi),
this process's resident memory, and CUDA's peak allocation.

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
    def __init__(self) -> None:
        self.handle, self.exe = None, None
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml, self.handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:  # noqa: BLE001 - no NVML (no GPU, no driver): fall back to nvidia-smi
            self.exe = shutil.which("nvidia-smi")

    def util(self) -> int | None:
        if self.handle is not None:
            return int(self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)
        if self.exe:
            out = subprocess.run(
                [self.exe, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.split()
            return int(out[0]) if out else None
        return None


class StageMonitor:
    def __init__(self, every: float = 0.1) -> None:
        import torch

        self.cuda = torch.cuda.is_available()
        self.every, self.util, self.rss = every, [], []
        self._stop = threading.Event()
        self._gpu = _Gpu() if self.cuda else None
        self.cuda_peak = 0
        self.seconds = 0.0

    def _run(self) -> None:
        while not self._stop.is_set():
            self.rss.append(_rss_bytes())
            if self._gpu is not None:
                try:
                    u = self._gpu.util()
                    if u is not None:
                        self.util.append(u)
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
        return ", ".join(parts)
