"""Every reject reason this recipe's stages write (the ``stage`` column of ``rejects``), with how
each is made to happen: ``E2E`` (the plausible test server provokes it in the whole demo run,
tests/e2e/test_nonstub.py), a test file that names it, or ``UNTESTED``. The spec carries it
(``BenchmarkSpec.rejects``); tests/foundation/test_reject_registry.py checks it against the code."""

from __future__ import annotations

from forge.benchmarks.spec import E2E, UNTESTED

_HUMMUS = "tests/recipes/hummus/test_hummus_assets.py"

REJECTS: dict[str, dict[str, str]] = {
    "hummus_pairs": {
        "no_caption": _HUMMUS,
        "caption_failed": UNTESTED,
    },
    "hummus_annotations": {  # refine outcomes, or the failing check of an unreadable annotation
        "generation_failed": E2E,
        "verdict_changed": "tests/recipes/hummus/test_hummus_as_built.py",  # verdict flipped while revising
        "wrong_language": "tests/recipes/hummus/test_hummus_as_built.py",  # not English, before any other check
        "max_rounds": "tests/recipes/hummus/test_hummus_assets.py",
        "bad_verdict": UNTESTED,
        "invalid_annotation": UNTESTED,
    },
    "hummus_items": {  # detail tasks of a verdict-only annotation, by its failing check
        "missing_annotation": UNTESTED,
        "bad_metaphor_format": "tests/recipes/hummus/test_hummus_stub.py",
        "box_out_of_bounds": "tests/recipes/hummus/test_hummus_balance.py",
        "invalid_span": _HUMMUS,
        "explanation_too_long": _HUMMUS,
        "unknown_device": UNTESTED,
        "balance_partner_dropped": UNTESTED,
    },
}
