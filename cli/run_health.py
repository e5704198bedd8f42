"""A running build is watched: its heartbeat is kept, a step waiting for a pool slot says why and
gives up in time, and SIGTERM / SIGINT stop it cleanly. The dead-run sweep it starts with (and
the tags it reads) is sensors/run_health.py.

``RunWatch`` sees a step of its run waiting for a slot: it logs which runs hold the pool, sweeps
(a dead holder is freed on the spot) and, past ``slot_wait_timeout_s``, fails the run with
``SlotWaitTimeout`` instead of waiting forever.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Self

import dagster as dg

from cli.dagster_internals import check_captured_interrupt, pop_captured_interrupt
from sensors.run_health import (
    HEARTBEAT_TAG,
    WATCH_TAG,
    HealthSettings,
    free_slots,
    process_tags,
    sweep_dead_runs,
)

log = logging.getLogger("subtext_forge.run_health")


class SlotWaitTimeout(dg.DagsterExecutionInterruptedError):
    """A step waited longer than ``slot_wait_timeout_s`` for a pool slot."""


class Terminated(dg.DagsterExecutionInterruptedError):
    """The process got SIGTERM (or SIGINT): the build stops. ``signal``: its name, when known."""

    def __init__(self, message: str = "", signal: str | None = None):
        super().__init__(message)
        self.signal = signal


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
    """SIGTERM and SIGINT stop the build: ``cli.build`` launches no run after one arrives (it asks
    ``stopping()`` before each launch and after each run) and the run in flight is stopped, not
    awaited to completion: Dagster raises the signal inside the run's executing step, the
    ``RunWatch`` re-raises one Dagster holds while steps wait for a slot (SIGUSR1, as it does its
    slot-wait timeout), and one that lands while the run is being created or closed (``launching``)
    raises ``Terminated`` here. Between runs a signal is only recorded.

    During a run Dagster's own handlers replace these and consume the signal, so a wakeup fd
    records every signal the process receives, whoever handles it: none is missed."""

    def __init__(self, stop_reason: Callable[[], tuple[str, str] | None]):
        self.stop_reason = stop_reason
        self.signalled: str | None = None
        self._depth = 0
        self._old: dict[int, object] = {}
        self._launching = False
        self._wake: tuple[int, int] | None = None  # (read, write) ends of the wakeup pipe
        self._old_wakeup = -1

    def _note(self, signum: int) -> str:
        self.signalled = self.signalled or signal.Signals(signum).name  # the first one stops the build
        return self.signalled

    def __enter__(self) -> Self:  # re-entrant: the outermost one installs them
        def terminate(signum: int, _frame: object) -> None:
            name = self._note(signum)
            if self._launching:
                raise Terminated(f"{name} received: run stopped")

        def from_watch(_signum: int, _frame: object) -> None:
            kind, message = self.stop_reason() or ("timeout", "gave up waiting for a pool slot")
            if kind == "signal":
                self.stopping()  # which signal it was (the wakeup fd has it); SIGTERM if none
                self.signalled = self.signalled or "SIGTERM"
                raise Terminated(message)
            raise SlotWaitTimeout(message)

        if self._depth == 0 and threading.current_thread() is threading.main_thread():
            self._old = {
                s: signal.signal(s, h)
                for s, h in ((signal.SIGTERM, terminate), (signal.SIGINT, terminate), (signal.SIGUSR1, from_watch))
            }
            read, write = os.pipe()
            os.set_blocking(read, False)
            os.set_blocking(write, False)
            self._old_wakeup = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
            self._wake = (read, write)
        self._depth += 1
        return self

    def stopping(self) -> str | None:
        """The name of the signal that stops the build, None while none arrived."""
        if self._wake is not None:
            try:
                received = os.read(self._wake[0], 4096)
            except BlockingIOError:
                received = b""
            for signum in received:
                if signum in (signal.SIGTERM, signal.SIGINT):
                    self._note(signum)
        return self.signalled

    @contextmanager
    def launching(self) -> Iterator[None]:
        """Around the launch of a run: a signal our handler (not Dagster's) gets here raises."""
        self._launching = True
        try:
            yield
        finally:
            self._launching = False

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.stopping()  # a signal that came with the last run is not lost with the pipe
            for s, h in self._old.items():
                signal.signal(s, h)
            self._old = {}
            if self._wake is not None:
                signal.set_wakeup_fd(self._old_wakeup)
                for fd in self._wake:
                    os.close(fd)
                self._wake = None


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
