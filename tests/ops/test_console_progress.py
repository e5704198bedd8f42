"""Feedback when output is not a terminal: progress lines at a fixed interval, and a line that
says what is still running when a stage prints nothing (no silent log file)."""

import io
import logging
import time

from forge.console.build_console import ConsoleHandler, Heartbeat


def _record(msg: str) -> logging.LogRecord:
    return logging.LogRecord("t", logging.INFO, __file__, 1, msg, None, None)


def test_a_silent_stage_gets_a_still_running_line_at_the_interval():
    out = io.StringIO()  # not a terminal
    handler = ConsoleHandler(out, every_s=0.3)
    with Heartbeat("maia_questions", handler):
        time.sleep(1.5)
    lines = out.getvalue().splitlines()
    assert 2 <= len(lines) <= 5, lines  # about one per interval, not one per second
    assert all(ln.startswith("  … maia_questions: still running (") for ln in lines)


def test_held_progress_is_printed_at_the_interval_then_the_stage_end():
    out = io.StringIO()
    handler = ConsoleHandler(out, every_s=0.3, long_s=0.0)
    with Heartbeat("ocr", handler):
        handler.emit(_record("ocr b-0000: 3/40 (1.0/s, ETA 37s)"))
        assert out.getvalue() == ""  # held back: one line per interval, not per record
        time.sleep(0.8)
        assert "ocr b-0000: 3/40" in out.getvalue() and "still running" not in out.getvalue()
        handler.emit(_record("ocr b-0000: 40/40 (1.0/s, ETA 0s)"))
    assert out.getvalue().splitlines()[-1].endswith("40/40 (1.0/s, ETA 0s)")


def test_a_terminal_gets_no_heartbeat_lines():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    with Heartbeat("x", ConsoleHandler(out, every_s=0.1)):
        time.sleep(0.5)
    assert out.getvalue() == ""
