"""Every reject reason this recipe's stages write (the ``stage`` column of ``rejects``), with how
each is made to happen: ``E2E`` (the plausible test server provokes it in the whole demo run,
tests/e2e/test_nonstub.py), a test file that names it, or ``UNTESTED``. The spec carries it
(``BenchmarkSpec.rejects``); tests/foundation/test_reject_registry.py checks it against the code."""

from __future__ import annotations

from forge.benchmarks.spec import E2E, UNTESTED

_VAGUE = "tests/recipes/vague/test_vague_assets.py"
_VAGUE_LOGIC = "tests/recipes/vague/test_vague_logic.py"
_VAGUE_STUB = "tests/recipes/vague/test_vague_stub.py"

REJECTS: dict[str, dict[str, str]] = {
    "vague_candidates": {
        "frame_missing": UNTESTED,
        "frame_kind": E2E,
        "blurry": _VAGUE_LOGIC,
        "too_few_persons": _VAGUE_LOGIC,
        "too_few_tags": _VAGUE_LOGIC,
        "no_object_vocabulary": _VAGUE_LOGIC,
        "neighbouring_frame": _VAGUE_LOGIC,
        "batch_cap": UNTESTED,
    },
    "vague_direct": {
        "wrong_language": "tests/recipes/vague/test_vague_as_built.py",  # not English, before the triple checks
        "subject_not_a_person_label": _VAGUE_LOGIC,
        "object_not_in_tags": _VAGUE,
        "empty_action": _VAGUE_LOGIC,
        "empty_direct_expression": UNTESTED,
        "empty_intention": UNTESTED,
        "direct_generation_failed": UNTESTED,
        "direct_judge_failed": UNTESTED,
        "low_direct_rating": _VAGUE,
    },
    "vague_indirect": {
        "wrong_language": "tests/recipes/vague/test_vague_as_built.py",  # no candidate in English
        "indirect_generation_failed": UNTESTED,
        "indirect_not_ambiguous": _VAGUE,
        "indirect_judge_failed": UNTESTED,
        "low_indirect_rating": _VAGUE_STUB,
        "dropped_by_people": "tests/recipes/vague/test_vague_protocol.py",  # raters' ratings decide (issue #54)
    },
    "vague_options": {
        "fs_generation_failed": UNTESTED,
        "ne_generation_failed": UNTESTED,
        "ne_max_rounds": _VAGUE,
        "ne_empty_object": UNTESTED,
        "ne_same_object": _VAGUE_LOGIC,
        "ne_object_present": _VAGUE,
        "ne_mentions_original": _VAGUE_LOGIC,
    },
    "vague_items": {
        "missing_options": UNTESTED,
        "option_too_long": "tests/recipes/vague/test_vague_as_built.py",  # official prompts: ≤ 15 words
        "duplicate_options": _VAGUE_STUB,
    },
}
