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


def _warning(msg: str) -> logging.LogRecord:
    return logging.LogRecord("t", logging.WARNING, __file__, 1, msg, None, None)


def test_one_cause_warned_by_many_steps_is_one_line_and_a_note():
    out = io.StringIO()
    handler = ConsoleHandler(out)
    down = "Label Studio is not running at http://127.0.0.1:8080; start it with `make review`"
    for bench, note in [("hummus", "nothing pushed"), ("maia", "nothing read"), ("vague", "nothing pushed")] * 4:
        handler.emit(_warning(f"{bench}: {down} (policy advisory: {note})"))
    handler.emit(_warning("iibench: 3 items have no gold"))  # another cause is printed
    handler.emit(_warning("vague: 5 items have no gold"))  # so is the same words with other figures
    lines = out.getvalue().splitlines()
    assert len(lines) == 4, lines
    assert lines[0].startswith("  WARNING: hummus: Label Studio is not running")
    assert lines[1].startswith("  (more steps give the same warning: Label Studio is not running")
    assert lines[2:] == ["  WARNING: iibench: 3 items have no gold", "  WARNING: vague: 5 items have no gold"]
