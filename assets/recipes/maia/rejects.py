"""Every reject reason this recipe's stages write (the ``stage`` column of ``rejects``), with how
each is made to happen: ``E2E`` (the plausible test server provokes it in the whole demo run,
tests/e2e/test_nonstub.py), a test file that names it, or ``UNTESTED``. The spec carries it
(``BenchmarkSpec.rejects``); tests/foundation/test_reject_registry.py checks it against the code."""

from __future__ import annotations

from forge.benchmarks.spec import E2E, UNTESTED

_MAIA = "tests/recipes/maia/test_maia_assets.py"
_MAIA_LANGUAGE = "tests/recipes/maia/test_maia_language.py"
_MAIA_LOGIC = "tests/recipes/maia/test_maia_logic.py"
_MAIA_POOLS = "tests/recipes/maia/test_maia_pool_flow.py"

REJECTS: dict[str, dict[str, str]] = {
    "maia_questions": {  # a failing question is asked again (new seed) up to the bound: each draw a row
        "import_missing_field": UNTESTED,
        "import_unknown_category": _MAIA_LOGIC,
        "over_batch_cap": UNTESTED,
        "no_frames": UNTESTED,
        "llm_failed": E2E,
        "wrong_language": _MAIA_LANGUAGE,
        "yes_no_question": E2E,
        "question_too_short": E2E,
        "audio_based_question": E2E,
        "pair_same_focus": E2E,
    },
    "maia_answer_pools": {  # discarded draws of a member (it is drawn again, then kept flagged for review)
        "llm_failed": E2E,
        "wrong_language": _MAIA_POOLS,
        "consistency_check_failed": E2E,
        "inconsistent_answer": E2E,
        "pool_contradiction": _MAIA_POOLS,  # only under contradicting_answers: regenerate (the default adjudicates)
        "pool_too_small": _MAIA_POOLS,  # no member of the pool has any text at all
    },
    "maia_statements": {  # discarded draws of a statement (drawn again, then kept flagged for review)
        "llm_failed": E2E,
        "wrong_language": _MAIA_POOLS,
        "statement_invalid": _MAIA_POOLS,
        "pool_too_small": _MAIA_POOLS,
    },
    "maia_foils": {  # discarded draws of a foil (drawn again, then kept flagged for review)
        "refine_generation_failed": E2E,
        "refine_judge_failed": E2E,
        "refine_verdict_reject": "tests/llm/test_refine.py",
        "refine_max_rounds": E2E,
        "wrong_language": _MAIA,
        "no_foil": _MAIA,  # no draw gave any foil text: the statement's pair is a gap of its pool
    },
}
