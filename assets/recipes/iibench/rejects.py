"""Every reject reason this recipe's stages write (the ``stage`` column of ``rejects``), with how
each is made to happen: ``E2E`` (the plausible test server provokes it in the whole demo run,
tests/e2e/test_nonstub.py), a test file that names it, or ``UNTESTED``. The spec carries it
(``BenchmarkSpec.rejects``); tests/foundation/test_reject_registry.py checks it against the code."""

from __future__ import annotations

from forge.benchmarks.spec import E2E, UNTESTED

_IIBENCH = "tests/recipes/iibench/test_iibench_assets.py"
_IIBENCH_STUB = "tests/recipes/iibench/test_iibench_stub.py"

REJECTS: dict[str, dict[str, str]] = {
    "iibench_implication": {
        "not_deduplicated": UNTESTED,
        "duplicate": E2E,
        "no_text_ratio": UNTESTED,
        "text_ratio_exceeded": _IIBENCH,
        "judge_failed": E2E,
        "no_implication": _IIBENCH_STUB,  # scripted too; the e2e's ~7 II-Bench images do not always show it
    },
    "iibench_labels": {
        "generation_failed": E2E,
        "wrong_language": "tests/recipes/iibench/test_iibench_logic.py",  # not English, before the label checks
        "invalid_labels": _IIBENCH_STUB,
        "dropped_by_people": "tests/review/test_loop_starts_and_flows.py",  # people dropped it at inspection
    },
    "iibench_items": {
        "generation_failed": UNTESTED,
        "judge_failed": E2E,
        "verdict_reject": UNTESTED,
        "bad_options": UNTESTED,
        "duplicate_options": _IIBENCH_STUB,  # scripted too, but not seen in the measured e2e run
        "answer_not_supported": _IIBENCH_STUB,  # scripted too; depends on which flaw kind the few judge calls draw
        "distractor_also_correct": _IIBENCH,  # scripted too, but not seen in the measured e2e run
        "distractor_implausible": _IIBENCH_STUB,  # scripted too; the e2e's few II-Bench items do not always show it
        "unknown": UNTESTED,  # primary_reason's fallback: a failed question without a code
    },
}
