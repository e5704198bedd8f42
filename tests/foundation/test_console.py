"""cli.build's console: INFO by default, one progress line per long stage, Dagster's beta /
preview warnings filtered by class (other warnings still print)."""

import io
import logging
import subprocess
import sys
from pathlib import Path

import dagster as dg

from assets.common import Progress
from cli.build import run_segment, segment_label
from forge.console.build_console import ConsoleHandler

ROOT = Path(__file__).resolve().parents[2]


def test_beta_warning_filtered_user_warning_printed():
    code = (
        "import warnings, dagster as dg\n"
        "from definitions import quiet_dagster_warnings\n"
        "quiet_dagster_warnings()\n"
        "warnings.warn('beta thing', dg.BetaWarning)\n"
        "warnings.warn('preview thing', dg.PreviewWarning)\n"
        "warnings.warn('user thing', UserWarning)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "user thing" in proc.stderr
    assert "beta thing" not in proc.stderr and "preview thing" not in proc.stderr


def _record(msg: str, level: int = logging.INFO, step: str = "ocr_step") -> logging.LogRecord:
    rec = logging.LogRecord("x", level, __file__, 1, msg, None, None)
    rec.dagster_meta = {"orig_message": msg, "step_key": step}
    return rec


def test_progress_lines_collapse_to_one_line_per_long_stage_off_a_terminal():
    out = io.StringIO()  # not a tty
    long_stage = ConsoleHandler(out, long_s=0.0, every_s=1e9)  # every stage counts as long; no interim lines
    for done in (1, 2, 3):
        long_stage.handle(_record(f"ocr b-0000: {done}/3 (1.0/s, ETA {3 - done}s)"))
    long_stage.handle(_record("b-0000: 3 rows, 0 rejects"))
    long_stage.handle(_record("no detector weights", logging.WARNING))
    assert out.getvalue().splitlines() == [
        "  ocr_step: ocr b-0000: 3/3 (1.0/s, ETA 0s)",
        "  ocr_step: b-0000: 3 rows, 0 rejects",
        "  ocr_step: WARNING: no detector weights",
    ]
    out = io.StringIO()
    short_stage = ConsoleHandler(out, long_s=1e9, every_s=1e9)  # a short stage leaves no progress line
    for done in (1, 2):
        short_stage.handle(_record(f"maia_foils b: {done}/2 LLM requests (9.0/s, ETA 0s); 0 in flight"))
    assert out.getvalue() == ""


@dg.asset
def chatty(context: dg.AssetExecutionContext) -> None:
    context.log.info("info line from the asset")
    context.log.debug("debug line from the asset")
    progress = Progress(context.log, "work", 2, every_s=0.0)
    progress.step()
    progress.step()


def test_quiet_segment_prints_info_not_dagster_debug_events(capfd):
    from cli.build import Segment

    defs = dg.Definitions(assets=[chatty])
    seg = Segment(None, [chatty.key])
    assert segment_label(Segment(None, [dg.AssetKey(f"a{i}") for i in range(6)]), shown=2) == "a0, a1 (+4 more)"
    assert run_segment(defs, dg.DagsterInstance.ephemeral(), seg)
    quiet = capfd.readouterr()
    text = quiet.out + quiet.err
    assert "info line from the asset" in text
    assert "debug line from the asset" not in text and "STEP_START" not in text
    assert run_segment(defs, dg.DagsterInstance.ephemeral(), seg, verbose=True)
    loud = capfd.readouterr()
    assert "STEP_START" in loud.out + loud.err and "debug line from the asset" in loud.out + loud.err


ENGINE_LIKE_BUILD = """
import logging, sys, dagster as dg
from cli.build import Segment, run_segment
from forge.console.build_console import project_logs_through_dagster_only
import forge.llm.progress  # what an LLM stage imports: the engine's logger at INFO

@dg.asset
def engine_like() -> None:
    logging.getLogger("subtext_forge.llm").info("stage b: 5/5 LLM requests (9.0/s, ETA 0s); 0 in flight")
    logging.getLogger("subtext_forge.llm").info("engine says hello")

logging.basicConfig(stream=sys.stderr)  # what absl (via rouge-score) does mid-build
project_logs_through_dagster_only()
instance = dg.DagsterInstance.local_temp(
    sys.argv[1], overrides={"python_logs": {"managed_python_loggers": ["subtext_forge.llm"]}}
)
assert run_segment(dg.Definitions(assets=[engine_like]), instance, Segment(None, [engine_like.key]))
"""


def test_project_logger_lines_print_once_even_when_a_library_configured_the_root_logger(tmp_path):
    """absl (via rouge-score) calls logging.basicConfig mid-build: the engine's lines must still
    print once, through Dagster's managed-logger capture, not a second time from the root logger.
    In its own process: a build swaps process-wide logging and stdio state."""
    proc = subprocess.run(
        [sys.executable, "-c", ENGINE_LIKE_BUILD, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout + proc.stderr
    assert text.count("engine says hello") == 1, text
    assert "  engine_like: engine says hello" in text
