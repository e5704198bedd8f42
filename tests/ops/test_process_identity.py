"""Is a run's process alive, and the same one? (sensors/run_health.py). The dead-run sweep of one
build must never fail a live build's run: under a full `make test` four concurrent builds once
waited 10 minutes for their four pool slots, which the sweep can free. A wall-clock start time
is not a process's identity: psutil adds /proc/stat's whole-second boot time, which moves when
the clock is adjusted, so another process can see the same start one second off."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from sensors import run_health
from sensors.run_health import PID_TAG, PROC_START_TAG, WALL_START_TAG, HealthSettings, process_alive, why_dead


class _Run:
    def __init__(self, tags: dict[str, str]) -> None:
        self.tags, self.parent_run_id, self.run_id, self.status = tags, None, "r1", None


def _verdict(tags: dict[str, str]) -> str | None:
    return why_dead(None, _Run(tags), HealthSettings(), time.time(), False)  # type: ignore[arg-type]


def test_the_tag_is_the_start_since_boot_and_matches_this_process():
    tags = run_health.process_tags()
    # the kernel's count, seconds since boot (psutil's wall-clock start less the boot time)
    assert float(tags[PROC_START_TAG]) == pytest.approx(psutil.Process().create_time() - psutil.boot_time(), abs=0.02)
    assert WALL_START_TAG not in tags
    assert _verdict(tags) is None


def test_a_moved_boot_time_does_not_kill_a_live_run(monkeypatch):
    tags = run_health.process_tags()
    before = psutil.Process().create_time()
    # the clock was adjusted since the tag was written: every wall-clock start now reads 1.5 s later
    monkeypatch.setattr(psutil._pslinux, "boot_time", lambda real=psutil._pslinux.boot_time: real() + 1.5)
    assert psutil.Process().create_time() - before == pytest.approx(1.5)
    assert _verdict(tags) is None
    # a run tagged by an earlier version (wall-clock start only) survives the same shift
    legacy = {k: v for k, v in tags.items() if k != PROC_START_TAG}
    legacy[WALL_START_TAG] = f"{before:.3f}"
    assert _verdict(legacy) is None


def test_a_recycled_pid_is_not_the_run_s_process():
    tags = run_health.process_tags()
    assert process_alive(psutil.Process().pid, since_boot=float(tags[PROC_START_TAG]))
    # same pid, another start: a later process that got the number
    assert not process_alive(psutil.Process().pid, since_boot=float(tags[PROC_START_TAG]) + 3.0)
    assert "is gone" in _verdict({**tags, PROC_START_TAG: f"{float(tags[PROC_START_TAG]) - 5:.3f}"})


def test_an_ended_process_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    tags = {**run_health.process_tags(), PID_TAG: str(child.pid)}
    assert "is gone" in _verdict(tags)
