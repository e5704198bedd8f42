"""Every reject reason this recipe's stages write (the ``stage`` column of ``rejects``), with how
each is made to happen: ``E2E`` (the plausible test server provokes it in the whole demo run,
tests/e2e/test_nonstub.py), a test file that names it, or ``UNTESTED``. The spec carries it
(``BenchmarkSpec.rejects``); tests/foundation/test_reject_registry.py checks it against the code."""

from __future__ import annotations

from forge.benchmarks.spec import E2E, UNTESTED

_VIMU = "tests/recipes/vimu/test_assets.py"

REJECTS: dict[str, dict[str, str]] = {
    "vimu_annotations": {
        "over_batch_cap": UNTESTED,
        "no_frames": _VIMU,
        "llm_failed": UNTESTED,
        "invalid_labels": UNTESTED,
        "missing_labels": UNTESTED,
        "missing_meaning": UNTESTED,
        "requires_external_context": _VIMU,
        "ambiguous": _VIMU,
    },
    "vimu_questions": {
        "refine_generation_failed": UNTESTED,
        "wrong_language": "tests/recipes/vimu/test_judge_inputs.py",  # not English, before the hint check
        "refine_judge_failed": E2E,
        "refine_verdict_reject": _VIMU,
        "refine_max_rounds": _VIMU,
    },
    "vimu_items": {
        "annotation_missing": UNTESTED,
        "eg_no_macro": UNTESTED,
        "rm_no_macro": "tests/recipes/vimu/test_items.py",
        "sv_no_macro": UNTESTED,
    },
}
