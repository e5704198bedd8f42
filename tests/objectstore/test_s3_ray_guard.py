"""Pieces of the two-node Ray bucket check (scripts/ray_bucket_check.py, ``make test-s3-ray``)
that run in seconds: the open() guard its Ray nodes import, and a worker's first open of the
bucket, which rides out throttling that stops a driver's quick check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forge.storage import TableStore, objects
from forge.storage.location import StorageUnavailable, fault_counts, forget_remotes

GUARD_SITE = Path(__file__).parent / "ray_guard"


def _guarded_process(tmp_path: Path, code: str, guarded: list[Path]) -> Path:
    report = tmp_path / "report"
    report.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(GUARD_SITE), os.environ.get("PYTHONPATH", "")]),
        "SUBTEXT_GUARD_PATHS": json.dumps([str(g) for g in guarded]),
        "SUBTEXT_GUARD_REPORT": str(report),
    }
    subprocess.run([sys.executable, "-S", "-c", "import sitecustomize\n" + code], env=env, check=True, timeout=60)
    return report


def test_the_guard_reports_every_open_under_a_guarded_dir_and_nothing_else(tmp_path):
    guarded, other = tmp_path / "data", tmp_path / "node2"
    for d in (guarded / "media", other):
        d.mkdir(parents=True)
    (guarded / "media" / "f.jpg").write_bytes(b"x")
    (other / "g.jpg").write_bytes(b"y")
    code = (
        f"open({str(other / 'g.jpg')!r}).close()\n"
        f"open({str(guarded / 'media' / 'f.jpg')!r}, 'rb').close()\n"
        f"import pathlib; pathlib.Path({str(guarded / 'new.txt')!r}).write_text('z')\n"
    )
    report = _guarded_process(tmp_path, code, [guarded])
    [installed] = report.glob("installed-*.txt")
    [opened] = report.glob("opened-*.txt")
    assert opened.name.split("-")[1] == installed.name.split("-")[1]  # the same process
    assert opened.read_text().splitlines() == [str(guarded / "media" / "f.jpg"), str(guarded / "new.txt")]


def test_the_guard_is_silent_without_its_settings(tmp_path):
    report = tmp_path / "report"
    report.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBTEXT_GUARD")}
    env["PYTHONPATH"] = str(GUARD_SITE)
    subprocess.run([sys.executable, "-S", "-c", "import sitecustomize"], env=env, check=True, timeout=60)
    assert list(report.iterdir()) == []


def test_a_worker_rides_out_faults_at_its_first_open_where_the_drivers_quick_check_stops(s3_url, s3_server):
    TableStore(s3_url)  # the driver checked the location at the run's start
    forget_remotes()  # a fresh process: a Ray worker opening the location it was handed
    s3_server.faults.add("503", "503", "503")  # throttling (SlowDown), backoff scaled down here
    with pytest.raises(StorageUnavailable, match="nothing was written"):
        TableStore(s3_url)  # two tries: the driver's start reports a bad location in seconds
    forget_remotes()
    s3_server.faults.pending.clear()
    s3_server.faults.add("503", "503", "503")  # more than the quick check's two tries
    before = fault_counts().get("throttled", 0)
    store = objects.worker_store(s3_url)
    assert store.remote is not None and not s3_server.faults.pending  # every fault met, retried
    assert fault_counts().get("throttled", 0) - before == 3  # and counted
    assert store.remote.listing(".subtext-preflight") == {}  # its probe object deleted
