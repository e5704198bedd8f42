"""The Dagster instance on Postgres (docs/operations.md "Postgres for teams"): a local server
started by scripts/dev_postgres.sh, the instance config rendered from the project's own
dagster.yaml + dagster.postgres.yaml, then a daemon that runs a partitioned backfill and two
runs that can only succeed when they run at the same time."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.execution.backfill import BulkActionStatus
from dagster._core.storage.dagster_run import DagsterRunStatus

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SCRIPT = ROOT / "scripts" / "dev_postgres.sh"
CODE = ["-f", str(ROOT / "tests" / "ops" / "pg_job.py")]

pytestmark = [pytest.mark.slow, pytest.mark.cli]

if not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
    pytest.skip(
        "PostgreSQL server binaries are not installed (`make test` installs them as root with "
        "scripts/ensure_postgres.sh; or apt-get install postgresql)",
        allow_module_level=True,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def pg_url():
    folder = Path(tempfile.mkdtemp(prefix="subtext_pg_"))  # under /tmp: the postgres user must reach it
    os.chmod(folder, 0o755)
    url = subprocess.run(
        ["bash", str(SCRIPT), "start", str(folder), str(_free_port())], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        yield url
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)


def _until(cond, timeout: float, what: str, daemon: subprocess.Popen) -> None:
    t_end = time.time() + timeout
    while time.time() < t_end:
        if cond():
            return
        assert daemon.poll() is None, "the daemon exited"
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


def _cli(args: list[str], env: dict[str, str]) -> None:
    proc = subprocess.run(
        [str(BIN / "dagster"), *args, *CODE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_partitioned_backfill_and_concurrent_runs_on_postgres(pg_url, tmp_path, monkeypatch):
    from dagster_postgres import (
        PostgresEventLogStorage,
        PostgresRunStorage,
        PostgresScheduleStorage,
    )

    home, marks = tmp_path / "home", tmp_path / "marks"
    marks.mkdir()
    subprocess.run(["bash", str(SCRIPT), "render", str(home)], check=True)
    monkeypatch.setenv("DAGSTER_PG_URL", pg_url)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DAGSTER_PG_URL": pg_url,
        "PG_TEST_DIR": str(marks),
        "PYTHONWARNINGS": "ignore",
    }
    instance = dg.DagsterInstance.from_config(str(home))
    assert isinstance(instance.run_storage, PostgresRunStorage)
    assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
    assert isinstance(instance.schedule_storage, PostgresScheduleStorage)
    instance.event_log_storage.set_concurrency_slots("llm", 4)  # pools live in the same database

    daemon = subprocess.Popen(
        [str(BIN / "dagster-daemon"), "run", *CODE],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its code server and run workers are in its group: none outlives the test
    )
    try:
        _cli(["job", "backfill", "-j", "letters_job", "--partitions", "a,b,c", "--noprompt"], env)
        [backfill] = instance.get_backfills()

        def letters():
            return instance.get_runs(filters=dg.RunsFilter(job_name="letters_job"))

        _until(lambda: len(letters()) == 3 and all(r.is_finished for r in letters()), 500, "the backfill", daemon)
        assert instance.get_backfill(backfill.backfill_id).status in (
            BulkActionStatus.COMPLETED,
            BulkActionStatus.COMPLETED_SUCCESS,
        )
        assert sorted(instance.get_materialized_partitions(dg.AssetKey("pg_letters"))) == ["a", "b", "c"]
        assert {r.tags["dagster/partition"] for r in letters()} == {"a", "b", "c"}

        for me, other in (("x", "y"), ("y", "x")):  # each run waits for the other: only concurrent runs pass
            _cli(
                [
                    "job",
                    "launch",
                    "-j",
                    "rendezvous_job",
                    "--config-json",
                    json.dumps({"ops": {"pg_rendezvous": {"config": {"me": me, "other": other}}}}),
                ],
                env,
            )

        def rendezvous():
            return instance.get_runs(filters=dg.RunsFilter(job_name="rendezvous_job"))

        _until(lambda: len(rendezvous()) == 2 and all(r.is_finished for r in rendezvous()), 500, "the two runs", daemon)
        assert [r.status for r in rendezvous()] == [DagsterRunStatus.SUCCESS] * 2
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
        with contextlib.suppress(ProcessLookupError):  # a code server left behind (it outlived runs before)
            os.killpg(daemon.pid, signal.SIGKILL)
    runs = instance.get_runs()
    assert len(runs) == 5 and all(r.status == DagsterRunStatus.SUCCESS for r in runs)
    assert instance.event_log_storage.get_concurrency_info("llm").claimed_slots == []
    instance.dispose()
