"""SIGTERM or Ctrl-C stops ``cli.build`` at once: the run in flight is stopped (recorded as ended,
never left running), no further run is launched, and the build says what it stopped and what it
did not launch (issue #55). The graph (tests/ops/signal_build.py) has four runs; the signal comes
while the first one runs, and one of the other three depends on nothing, so only the stop keeps
it from running."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("sig", "rc"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_the_build_and_launches_no_further_run(tmp_path, sig, rc):
    home, marks = tmp_path / "home", tmp_path / "marks"
    home.mkdir()
    marks.mkdir()
    shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "SUBTEXT_DATA_DIR": str(tmp_path / "data"),
        "SIGNAL_TEST_MARKS": str(marks),
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "ops" / "signal_build.py")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        t_end = time.time() + 120
        while not (marks / "sig_first").exists():
            assert proc.poll() is None, proc.communicate()[0]
            assert time.time() < t_end, "the first run never started"
            time.sleep(0.1)
        proc.send_signal(sig)
        out = proc.communicate(timeout=60)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == rc, out
    assert sorted(p.name for p in marks.iterdir()) == ["sig_first"], out  # nothing else ran

    instance = dg.DagsterInstance.from_config(str(home))
    try:
        [run] = instance.get_runs()  # the one run in flight; no other was launched
        assert run.is_finished and run.status != dg.DagsterRunStatus.SUCCESS
    finally:
        instance.dispose()
    name = signal.Signals(sig).name
    assert f"Stopped by {name}: no further run is launched." in out, out
    assert f"stopped in flight: (asset job): sig_first (run {run.run_id[:8]} ended {run.status.value})" in out, out
    assert "not launched: 3 planned run(s):" in out, out
    for asset in ("sig_second", "sig_third", "sig_other"):
        assert f"    - (asset job): {asset}\n" in out, out
