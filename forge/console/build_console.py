"""What ``python -m cli.build`` prints: INFO and up from the assets, one line each, and the
stages' progress lines (``done/total (rate/s, ETA …)`` from ``assets.common.Progress`` and the
LLM engine) as one line per long stage instead of a line every few seconds.

Dagster's own console logger prints every run event at DEBUG (a build's console was ~1,000
lines); ``--verbose`` keeps it. The Dagster logger that every job of the location declares
(``build_console_logger``, definitions.py) hands its records to ``console_logger`` here.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
from typing import Any, TextIO

# "ocr local-0000: 12/68 (1.3/s, ETA 43s)" and "<stage> b-0000: 3/40 LLM requests (0.5/s, ETA 74s); ..."
PROGRESS = re.compile(r"^(?P<what>.+?): (?P<done>\d+)/(?P<total>\d+)\b.*\(\S+/s, ETA [^)]*\)")


# what differs between the same warning from two steps: the benchmark before it, a note after it
WARNING_GIST = re.compile(r"^[\w-]+: |\s*\([^()]*\)\s*$")


def project_logs_through_dagster_only() -> None:
    """The project's stdlib loggers (``subtext_forge.*``, e.g. the LLM engine's progress) reach the
    console through Dagster's managed-logger capture (dagster.yaml). A library that configures the
    root logger mid-build (absl, used by rouge-score, calls ``basicConfig``) would print each of
    their lines a second time; stopping propagation below ``subtext_forge`` prevents that."""
    logging.getLogger("subtext_forge").propagate = False


class ConsoleHandler(logging.Handler):
    """Compact build console: ``  <step>: <message>``.

    A progress line is held back and shown as one line per stage: on a terminal it is redrawn
    in place and kept when the stage ran at least ``long_s``; elsewhere (a pipe, a CI log) the
    last state is printed at most every ``every_s`` and once at the end of a long stage, and
    ``Heartbeat`` fills any silence longer than ``every_s`` (``SUBTEXT_PROGRESS_EVERY_S``, 30 s).
    """

    def __init__(self, stream: TextIO | None = None, long_s: float = 10.0, every_s: float = 30.0):
        super().__init__()
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.long_s, self.every_s = long_s, every_s
        self._started: dict[str, float] = {}
        self._printed: dict[str, float] = {}
        self._held: dict[str, str] = {}  # the latest progress line of each running stage, not yet printed
        self._open = False  # a progress line is drawn without its newline (terminal only)
        self.last_write = time.monotonic()  # a heartbeat speaks after every_s of silence (not a terminal)
        self._lock = threading.RLock()  # records and the heartbeat thread write to the same stream
        self._warned: dict[str, int] = {}  # a warning's gist → how many steps gave it

    def emit(self, record: logging.LogRecord) -> None:
        try:
            with self._lock:
                self._emit(record)
        except Exception:  # noqa: BLE001 - logging must never break a run; the stdlib reports it
            self.handleError(record)

    def _emit(self, record: logging.LogRecord) -> None:
        meta: dict[str, Any] = getattr(record, "dagster_meta", None) or {}
        message = str(meta.get("orig_message") or record.getMessage())
        source = meta.get("step_key") or meta.get("resource_name") or ""
        prefix = f"  {source}: " if source else "  "
        if record.levelno >= logging.WARNING:
            prefix += f"{record.levelname}: "
        match = PROGRESS.match(message) if record.levelno < logging.WARNING else None
        if match:
            self._progress(f"{source}|{match['what']}", prefix + message, match["done"] == match["total"])
            return
        self._close()
        if record.levelno == logging.WARNING and self._repeated(message):
            return
        error = getattr(meta.get("dagster_event"), "event_specific_data", None)
        error = getattr(error, "error", None)
        text = prefix + message
        if error is not None:  # a step failure: the error and where, not Dagster's header
            text += "\n" + "\n".join("    " + line for line in error.to_string().rstrip().splitlines())
        self._write(text + "\n")

    def _repeated(self, message: str) -> bool:
        """True when another step already gave this warning (the same text but for its leading
        ``<benchmark>:`` and trailing parenthesis): it is not printed again, so one cause (Label
        Studio not started) is one line, not one per step; the second time says so once. The run's
        logs in the UI keep every step's warning."""
        gist = WARNING_GIST.sub("", message).strip()
        seen = self._warned[gist] = self._warned.get(gist, 0) + 1
        if seen == 2:
            self._write(f"  (more steps give the same warning: {gist[:80]}…; each is in the run's logs)\n")
        return seen > 1

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
        self.last_write = time.monotonic()

    def heartbeat(self, label: str, elapsed: float) -> None:
        """After ``every_s`` without a line (output not a terminal): the held progress lines, or a
        line that says what is still running, so a log file never goes silent on a long stage."""
        with self._lock:
            if self.tty or time.monotonic() - self.last_write < self.every_s:
                return
            held = list(self._held.items())
            for key, line in held:
                self._printed[key] = time.monotonic()
                self._write(line + "\n")
            if not held:
                self._write(f"  … {label}: still running ({elapsed:.0f}s)\n")

    def _progress(self, key: str, line: str, finished: bool) -> None:
        now = time.monotonic()
        started = self._started.setdefault(key, now)
        long = now - started >= self.long_s
        if self.tty:
            self.stream.write("\r\033[K" + line)
            self._open = True
            if finished:
                self.stream.write("\n" if long else "\r\033[K")
                self._open = False
        elif (finished and long) or (not finished and now - self._printed.get(key, started) >= self.every_s):
            self._printed[key] = now
            self._held.pop(key, None)
            self._write(line + "\n")
        else:
            self._held[key] = line
        if finished:
            self._started.pop(key, None)
            self._printed.pop(key, None)
            self._held.pop(key, None)
        self.stream.flush()

    def _close(self) -> None:
        if self._open:
            self.stream.write("\n")
            self._open = False


_HANDLER: ConsoleHandler | None = None


def console_handler() -> ConsoleHandler:
    """One handler per process, so a progress line left open by one run is closed by the next."""
    global _HANDLER
    if _HANDLER is None or _HANDLER.stream is not sys.stderr:
        _HANDLER = ConsoleHandler(sys.stderr, every_s=float(os.environ.get("SUBTEXT_PROGRESS_EVERY_S", "30")))
    return _HANDLER


def console_logger(level: str = "INFO") -> logging.Logger:
    """The build's logger: ``level`` and up, through the one console handler, not to the root."""
    log = logging.getLogger("subtext_forge.build")
    log.setLevel(level)
    log.propagate = False
    log.handlers = [console_handler()]
    return log


class Heartbeat:
    """Around one run: every second (or faster), asks the console handler for a heartbeat line (it speaks
    only after ``every_s`` of silence, and never on a terminal, where progress redraws in place)."""

    def __init__(self, label: str, handler: ConsoleHandler | None = None):
        self.label, self.handler = label, handler or console_handler()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="console-heartbeat", daemon=True)

    def _loop(self) -> None:
        t0 = time.monotonic()
        tick = min(1.0, self.handler.every_s / 3)
        while not self._stop.wait(tick):
            self.handler.heartbeat(self.label, time.monotonic() - t0)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
