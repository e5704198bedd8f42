"""The benchmarks' GPU sampler (perf/stage_monitor.py) reads both the SMs' utilisation and
the hardware JPEG engines' (where device-decoded JPEGs run on A100/H100/H200), through NVML or
through nvidia-smi, and keeps to the SM figure where a driver knows no JPEG engine."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "perf"))


def _fake_smi(tmp_path: Path, knows_jpeg: bool) -> Path:
    exe = tmp_path / "nvidia-smi"
    body = (
        'case "$1" in *utilization.jpeg*) echo "37, 61";; *) echo "37";; esac'
        if knows_jpeg
        else 'case "$1" in *utilization.jpeg*) echo \'Field "utilization.jpeg" is not a valid field\' >&2; exit 2;; '
        '*) echo "42";; esac'
    )
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(0o755)
    return exe


@pytest.mark.parametrize("knows_jpeg", [True, False])
def test_nvidia_smi_sampling(tmp_path, monkeypatch, knows_jpeg):
    import stage_monitor

    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML: nvidia-smi
    monkeypatch.setenv("PATH", f"{_fake_smi(tmp_path, knows_jpeg).parent}:/usr/bin:/bin")
    gpu = stage_monitor._Gpu()
    assert gpu.handle is None and gpu.exe
    assert gpu.sample() == ((37, 61) if knows_jpeg else (42, None))
    assert gpu.jpeg is knows_jpeg  # an unknown field is asked for once, then left out
    assert gpu.sample() == ((37, 61) if knows_jpeg else (42, None))


def test_nvml_sampling_and_summary(monkeypatch):
    import stage_monitor

    class Rates:
        gpu = 40

    calls = {"jpg": 0}

    def jpg(handle):
        calls["jpg"] += 1
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: "h",
        nvmlDeviceGetUtilizationRates=lambda h: Rates,
        nvmlDeviceGetJpgUtilization=lambda h: [70, 1000],
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert stage_monitor._Gpu().sample() == (40, 70)
    fake.nvmlDeviceGetJpgUtilization = jpg  # a GPU without JPEG engines
    gpu = stage_monitor._Gpu()
    assert [gpu.sample(), gpu.sample()] == [(40, None)] * 2 and calls["jpg"] == 1

    mon = stage_monitor.StageMonitor.__new__(stage_monitor.StageMonitor)
    mon.cuda, mon.cuda_peak, mon.rss, mon.util, mon.jpeg = True, 2**30, [2**30], [30, 40], [60, 80]
    text = mon.summary()
    assert "GPU util mean 35% max 40% (2 samples)" in text and "JPEG engines util mean 70% max 80%" in text
