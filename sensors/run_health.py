"""Dead runs are found and cleaned: the sweep that ``sensors/dead_runs.py`` runs every minute in the
daemon and ``cli.build`` at its start (the watch over a running build is cli/run_health.py).

In-process runs (``cli.build``) have no run worker for the daemon's run monitoring to
watch, and Dagster's ``DefaultRunLauncher`` cannot report its workers' health either. So:

* every ``cli.build`` run carries its process in tags (host, pid, process start time) and a
  heartbeat tag that ``RunWatch`` refreshes while the run is in progress;
* ``sweep_dead_runs`` marks a run failed when its process is gone (same host: pid and start
  time) or its heartbeat is older than ``stale_after_s`` (a run on another host, e.g. with a
  shared Postgres instance), frees its pool slots at once (Dagster frees a finished run's
  slots only ``free_slots_after_run_end_seconds`` later, and only while the daemon runs) and
  records it in ``run_failures``. The daemon's sweep also checks launched runs by the pid
  their run worker logged at start (it runs on the launcher's host).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import psutil

log = logging.getLogger("subtext_forge.run_health")

LAUNCHED_BY_TAG = "subtext/launched_by"
# Operational tags under Dagster's hidden prefix (``.dagster/``): kept on the run for the dead-run
# sweep, out of sight in the UI's runs list (only `subtext/launched_by` shows there).
OPS_TAG_PREFIX = ".dagster/subtext/"
HOST_TAG = OPS_TAG_PREFIX + "host"
PID_TAG = OPS_TAG_PREFIX + "pid"
# When the process started, in seconds since boot: the kernel's count, which no clock change moves.
# (Wall-clock start times, the older "proc_start" tag, move when the clock is adjusted: psutil adds
# /proc/stat's whole-second btime, so two processes can see one start a second apart.)
PROC_START_TAG = OPS_TAG_PREFIX + "proc_start_since_boot"
WALL_START_TAG = OPS_TAG_PREFIX + "proc_start"  # runs tagged by earlier versions
HEARTBEAT_TAG = OPS_TAG_PREFIX + "heartbeat"
WATCH_TAG = OPS_TAG_PREFIX + "watch_id"  # finds the run execute_in_process creates

IN_PROGRESS = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


@dataclass(frozen=True)
class HealthSettings:
    """``SUBTEXT_HEARTBEAT_S``, ``SUBTEXT_RUN_STALE_AFTER_S``, ``SUBTEXT_SLOT_WAIT_TIMEOUT_S``
    (0 = wait for a slot forever)."""

    heartbeat_s: float = 15.0
    stale_after_s: float = 120.0
    slot_wait_timeout_s: float = 3600.0
    log_every_s: float = 60.0

    @classmethod
    def from_env(cls) -> HealthSettings:
        env = os.environ.get
        return cls(
            heartbeat_s=float(env("SUBTEXT_HEARTBEAT_S", cls.heartbeat_s)),
            stale_after_s=float(env("SUBTEXT_RUN_STALE_AFTER_S", cls.stale_after_s)),
            slot_wait_timeout_s=float(env("SUBTEXT_SLOT_WAIT_TIMEOUT_S", cls.slot_wait_timeout_s)),
        )


# -- who runs a run ----------------------------------------------------------------------


def started_since_boot(pid: int) -> float | None:
    """Seconds from boot to the process's start: field 22 of ``/proc/<pid>/stat``, in clock ticks
    (Linux); None where there is no such file."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # the command name may hold spaces and brackets
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")


def process_tags() -> dict[str, str]:
    me = psutil.Process()
    since_boot = started_since_boot(me.pid)
    start = (PROC_START_TAG, since_boot) if since_boot is not None else (WALL_START_TAG, me.create_time())
    return {
        HOST_TAG: socket.gethostname(),
        PID_TAG: str(me.pid),
        start[0]: f"{start[1]:.3f}",
        HEARTBEAT_TAG: f"{time.time():.0f}",
    }


def process_alive(
    pid: int,
    started_before: float | None = None,
    started_at: float | None = None,
    since_boot: float | None = None,
) -> bool:
    """Whether ``pid`` is a live process and (when given) the same one: started ``since_boot``
    seconds after boot (exact to the kernel's tick), at wall-clock ``started_at``, or before
    ``started_before`` (a recycled pid starts later). Wall-clock comparisons allow 2 s: psutil
    derives them from a whole-second boot time that moves when the clock is adjusted."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        created = proc.create_time()
    except psutil.NoSuchProcess:
        return False
    if since_boot is not None and abs((started_since_boot(pid) or -1.0) - since_boot) > 0.05:
        return False
    if started_at is not None and abs(created - started_at) > 2.0:
        return False
    return started_before is None or created <= started_before + 2.0


def run_worker_pid(instance: dg.DagsterInstance, run_id: str) -> tuple[int, float] | None:
    """(pid, when it was logged) of the run worker the ``DefaultRunLauncher`` started for a run
    (its "Started process for run" event). Only those: the daemon launches them on its own
    host, where the sweep sensor runs; a run executed in some other process (a CLI run, maybe
    on another machine sharing a Postgres instance) has no such event and is left alone."""
    if not isinstance(instance.run_launcher, dg.DefaultRunLauncher):
        return None
    for record in instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT, limit=20).records:
        event = record.event_log_entry.dagster_event
        if event is None or not (event.message or "").startswith("Started process for run"):
            continue
        pid = getattr(getattr(event, "event_specific_data", None), "metadata", {}).get("pid")
        if pid is not None:
            return int(pid.value), record.event_log_entry.timestamp
    return None


def why_dead(
    instance: dg.DagsterInstance, run: dg.DagsterRun, settings: HealthSettings, now: float, check_launched: bool
) -> str | None:
    """Why this in-progress run's process is gone, or None while it may be alive."""
    tags = run.tags or {}
    # A re-execution (UI, run retries) inherits its parent's tags, process tags included, but is
    # launched by Dagster: the process tags are only ours on a run without a parent.
    if PID_TAG in tags and run.parent_run_id is None:
        host, pid = tags.get(HOST_TAG, "?"), int(tags[PID_TAG])
        if host == socket.gethostname():
            since_boot = float(tags[PROC_START_TAG]) if PROC_START_TAG in tags else None
            wall = float(tags[WALL_START_TAG]) if WALL_START_TAG in tags and since_boot is None else None
            alive = process_alive(pid, started_at=wall, since_boot=since_boot)
            return None if alive else f"its process (pid {pid} on {host}) is gone"
        age = now - float(tags.get(HEARTBEAT_TAG, 0))
        return f"no heartbeat from pid {pid} on {host} for {age:.0f}s" if age > settings.stale_after_s else None
    if check_launched and run.status != dg.DagsterRunStatus.STARTING:  # STARTING: run monitoring's start timeout
        worker = run_worker_pid(instance, run.run_id)
        if worker is not None and not process_alive(worker[0], started_before=worker[1]):
            return f"its run worker (pid {worker[0]}) is gone"
    return None


# -- cleaning up -------------------------------------------------------------------------


def in_progress_steps(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    # a step's status is Dagster's StepEventStatus, which `dagster` does not export: read by its value
    return sorted(
        s.step_key for s in instance.get_run_step_stats(run_id) if s.status is None or s.status.value == "IN_PROGRESS"
    )


def fail_dead_run(
    instance: dg.DagsterInstance,
    run: dg.DagsterRun,
    reason: str,
    record: Callable[[dg.DagsterRun, str, list[str]], None] | None = None,
) -> str:
    """Mark the run failed (a RUN_FAILURE event: the UI and run-failure sensors see it), free
    its pool slots now, and record it; returns the message."""
    steps = in_progress_steps(instance, run.run_id)
    message = (
        f"Run died: {reason}. Marked failed by the dead-run sweep"
        + (f"; steps in progress: {', '.join(steps)}" if steps else "")
        + "; its pool slots were freed."
    )
    instance.report_run_failed(run, message)
    free_slots(instance, run.run_id)
    if record is not None:
        record(run, message, steps)
    log.warning("%s: %s", run.run_id, message)
    return message


def free_slots(instance: dg.DagsterInstance, run_id: str) -> int:
    if not instance.event_log_storage.supports_global_concurrency_limits:
        return 0
    return instance.event_log_storage.free_concurrency_slots_for_run(run_id) or 0


def sweep_dead_runs(
    instance: dg.DagsterInstance,
    settings: HealthSettings | None = None,
    record: Callable[[dg.DagsterRun, str, list[str]], None] | None = None,
    check_launched: bool = False,
) -> list[str]:
    """Fail every in-progress run whose process is gone; free slots no live run holds.
    Returns the ids of the runs marked failed."""
    settings = settings or HealthSettings.from_env()
    now = time.time()
    failed: list[str] = []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=IN_PROGRESS)):
        reason = why_dead(instance, run, settings, now, check_launched)
        if reason:
            fail_dead_run(instance, run, reason, record)
            failed.append(run.run_id)
    if instance.event_log_storage.supports_global_concurrency_limits:
        # slots of runs that ended (or were deleted) without freeing them: Dagster's daemon frees
        # them after free_slots_after_run_end_seconds; without a daemon no one would
        grace = float(instance.run_monitoring_settings.get("free_slots_after_run_end_seconds") or 0)
        for run_id in instance.event_log_storage.get_concurrency_run_ids():
            rec = instance.get_run_record_by_id(run_id)
            if rec is None or (rec.dagster_run.is_finished and (rec.end_time or 0) + grace < now):
                n = free_slots(instance, run_id)
                if n:
                    log.info("freed %d pool slots of finished run %s", n, run_id)
    return failed
