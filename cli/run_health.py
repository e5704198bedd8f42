"""Dead runs are found and cleaned; a step waiting for a pool slot says why and gives up in time.

In-process runs (``cli.build``) have no run worker for the daemon's run monitoring to
watch, and Dagster's ``DefaultRunLauncher`` cannot report its workers' health either. So:

* every ``cli.build`` run carries its process in tags (host, pid, process start time) and a
  heartbeat tag that ``RunWatch`` refreshes while the run is in progress;
* ``sweep_dead_runs`` marks a run failed when its process is gone (same host: pid and start
  time) or its heartbeat is older than ``stale_after_s`` (a run on another host, e.g. with a
  shared Postgres instance), frees its pool slots at once (Dagster frees a finished run's
  slots only ``free_slots_after_run_end_seconds`` later, and only while the daemon runs) and
  records it in ``run_failures``. It runs at the start of every ``cli.build`` and every
  minute in the daemon (``sensors/dead_runs.py``), which also checks launched runs by the
  pid their run worker logged at start (it runs on the launcher's host);
* ``RunWatch`` also sees a step of its run waiting for a slot: it logs which runs hold the
  pool, sweeps (a dead holder is freed on the spot) and, past ``slot_wait_timeout_s``, fails
  the run with ``SlotWaitTimeout`` instead of waiting forever.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import dagster as dg
import psutil

from cli.dagster_internals import StepEventStatus, check_captured_interrupt, pop_captured_interrupt

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


class SlotWaitTimeout(dg.DagsterExecutionInterruptedError):
    """A step waited longer than ``slot_wait_timeout_s`` for a pool slot."""


class Terminated(dg.DagsterExecutionInterruptedError):
    """The process got SIGTERM (or SIGINT) while a run was executing."""


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
    return sorted(
        s.step_key for s in instance.get_run_step_stats(run_id) if s.status in (None, StepEventStatus.IN_PROGRESS)
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


# -- watching a run while it executes -------------------------------------------------------


@dataclass
class RunWatch:
    """Heartbeat + slot-wait watchdog for the in-process run tagged ``WATCH_TAG=watch_id``.

    Use as a context manager around ``execute_in_process``; ``tags()`` go on the run."""

    instance: dg.DagsterInstance
    settings: HealthSettings = field(default_factory=HealthSettings.from_env)
    record: Callable[[dg.DagsterRun, str, list[str]], None] | None = None
    say: Callable[[str], None] = print
    watch_id: str = field(default_factory=lambda: f"{os.getpid()}-{time.time_ns()}")
    gave_up: str | None = None
    stop_reason: tuple[str, str] | None = None  # (signal | timeout, message): why the watch stops the run

    def tags(self) -> dict[str, str]:
        return {**process_tags(), WATCH_TAG: self.watch_id}

    def __enter__(self) -> Self:
        self._stop = threading.Event()
        self._run_id: str | None = None
        self._waiting_since: dict[str, float] = {}
        self._last_said = 0.0
        self._thread = threading.Thread(target=self._loop, name="run-watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        if self._run_id:  # the process is done with this run: nothing of it may keep a slot
            free_slots(self.instance, self._run_id)
            run = self.instance.get_run_by_id(self._run_id)
            if self.gave_up and run is not None and self.record is not None:  # visible without the daemon
                self.record(run, self.gave_up, sorted(self._waiting_since))

    @property
    def run_id(self) -> str | None:
        return self._run_id

    def _loop(self) -> None:
        tick = min(self.settings.heartbeat_s, 2.0)
        last_beat = time.time()
        while not self._stop.wait(tick):
            try:
                if self._run_id is None:
                    runs = self.instance.get_runs(filters=dg.RunsFilter(tags={WATCH_TAG: self.watch_id}), limit=1)
                    self._run_id = runs[0].run_id if runs else None
                    if self._run_id is None:
                        continue
                now = time.time()
                if now - last_beat >= self.settings.heartbeat_s:
                    self.instance.add_run_tags(self._run_id, {HEARTBEAT_TAG: f"{now:.0f}"})
                    last_beat = now
                self._check_slots(now)
                self._check_interrupt()
            except Exception as exc:  # noqa: BLE001 - the watch must never take the run down by itself
                log.warning("run watch: %s", exc)

    def _check_interrupt(self) -> None:
        # Dagster holds SIGTERM/SIGINT during a run until a step starts; a run whose steps wait
        # for a slot never gets there, so the watch raises it in the main thread (SIGUSR1).
        if self.stop_reason is None and check_captured_interrupt():
            pop_captured_interrupt()
            self.stop_reason = ("signal", "SIGTERM/SIGINT received: run stopped")
            self.say(self.stop_reason[1])
            os.kill(os.getpid(), signal.SIGUSR1)

    def waiting_steps(self) -> dict[str, str]:
        """step key → pool, for this run's steps queued for a slot."""
        storage = self.instance.event_log_storage
        waiting: dict[str, str] = {}
        for pool in storage.get_concurrency_keys():
            info = storage.get_concurrency_info(pool)
            for step in info.pending_steps:
                if step.run_id == self._run_id and step.assigned_timestamp is None:
                    waiting[step.step_key] = pool
        return waiting

    def holders(self, pool: str) -> str:
        info = self.instance.event_log_storage.get_concurrency_info(pool)
        parts = []
        for slot in info.claimed_slots:
            run = self.instance.get_run_by_id(slot.run_id)
            status = run.status.value if run else "deleted"
            parts.append(f"{slot.run_id[:8]} {slot.step_key} ({status})")
        return f"pool '{pool}' limit {info.limit}, held by: " + ("; ".join(parts) or "nobody")

    def _check_slots(self, now: float) -> None:
        waiting = self.waiting_steps()
        self._waiting_since = {k: self._waiting_since.get(k, now) for k in waiting}
        if not waiting:
            return
        oldest = min(self._waiting_since.values())
        if now - self._last_said >= self.settings.log_every_s or self._last_said < oldest:
            freed = sweep_dead_runs(self.instance, self.settings, self.record)
            lines = [
                f"step {k} waits {now - self._waiting_since[k]:.0f}s for a slot in {self.holders(p)}"
                for k, p in sorted(waiting.items())
            ]
            if freed:
                lines.append(f"freed the slots of dead runs {', '.join(freed)}")
            self._report("\n".join(lines))
            self._last_said = now
        timeout = self.settings.slot_wait_timeout_s
        if timeout and now - oldest > timeout and self.gave_up is None:
            self.gave_up = (
                f"SlotWaitTimeout: gave up after {timeout:.0f}s waiting for a pool slot "
                f"(SUBTEXT_SLOT_WAIT_TIMEOUT_S); "
                + "; ".join(f"{k}: {self.holders(p)}" for k, p in sorted(waiting.items()))
            )
            self._report(self.gave_up)
            if self.stop_reason is None:
                self.stop_reason = ("timeout", self.gave_up)
                os.kill(os.getpid(), signal.SIGUSR1)  # raised in the main thread by interrupt_handlers

    def _report(self, message: str) -> None:
        self.say(message)
        run = self.instance.get_run_by_id(self._run_id) if self._run_id else None
        if run is not None:  # the run's own log in the UI
            self.instance.report_engine_event(message, run)


class interrupt_handlers:
    """SIGTERM and SIGINT end the current run (a failure naming the signal; its slots are freed)
    and ``cli.build`` then stops. Inside a run Dagster holds these signals until a step starts,
    so the ``RunWatch`` re-raises them (and its slot-wait timeout) through SIGUSR1."""

    def __init__(self, stop_reason: Callable[[], tuple[str, str] | None]):
        self.stop_reason = stop_reason
        self.signalled: str | None = None
        self._depth = 0
        self._old: dict[int, object] = {}

    def __enter__(self) -> Self:  # re-entrant: the outermost one installs them
        def terminate(signum: int, _frame: object) -> None:
            self.signalled = signal.Signals(signum).name
            raise Terminated(f"{self.signalled} received: run stopped")

        def from_watch(_signum: int, _frame: object) -> None:
            kind, message = self.stop_reason() or ("timeout", "gave up waiting for a pool slot")
            if kind == "signal":
                self.signalled = "SIGTERM"
                raise Terminated(message)
            raise SlotWaitTimeout(message)

        if self._depth == 0 and threading.current_thread() is threading.main_thread():
            self._old = {
                s: signal.signal(s, h)
                for s, h in ((signal.SIGTERM, terminate), (signal.SIGINT, terminate), (signal.SIGUSR1, from_watch))
            }
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            for s, h in self._old.items():
                signal.signal(s, h)
            self._old = {}


class BuildHealth:
    """What ``cli.build`` uses: the start-up sweep, one ``RunWatch`` per run, signal handling;
    dead runs are recorded in the ``run_failures`` table of the configured data dir."""

    def __init__(self, instance: dg.DagsterInstance, settings: HealthSettings | None = None):
        from resources.storage import default_storage
        from sensors.failures import record_failure

        store = default_storage().store
        self.instance, self.settings = instance, settings or HealthSettings.from_env()
        self.record = lambda run, msg, steps: record_failure(store, run, msg, steps)
        self.current: RunWatch | None = None
        self.signals = interrupt_handlers(lambda: self.current.stop_reason if self.current else None)

    def sweep(self) -> list[str]:
        failed = sweep_dead_runs(self.instance, self.settings, self.record)
        for run_id in failed:
            print(f"  marked dead run {run_id} failed and freed its pool slots", flush=True)
        return failed

    def watch(self) -> RunWatch:
        self.current = RunWatch(self.instance, self.settings, self.record, say=lambda m: print("  " + m, flush=True))
        return self.current
