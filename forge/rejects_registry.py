"""Every reject reason the project writes, declared in one place: per stage, each reason and the
test that makes it happen.

A stage is the ``stage`` column of the ``rejects`` table (the asset that dropped the item). The
value says how the reason is covered:

* ``E2E`` — the plausible test server provokes it over HTTP (scripted flaws, refusals, doomed or
  stubborn items), and ``tests/e2e/test_nonstub.py`` asserts it occurs in the whole demo run and is
  counted in the ``rejects`` table and in the stage's ``rejects_by_reason`` metadata;
* a test file path — the reason needs an input or a condition no LLM reply causes (a media file,
  a release record, a source declaration, a batch cap) or more items than the e2e's small demo
  inputs give the stage; that test names it (``tests/foundation/test_reject_registry.py`` checks
  the file exists and names the reason);
* ``UNTESTED`` — no test makes it happen yet (listed in docs/operations.md, "Reject reasons").

``tests/foundation/test_reject_registry.py`` scans the code (tests/foundation/reject_scan.py):
a reason the code can emit that is declared nowhere, or a declared reason no code emits, fails it.
Adding a reason is one line in its stage.
"""

from __future__ import annotations

E2E = "e2e"
UNTESTED = "untested"

_MAIA = "tests/recipes/maia/test_maia_assets.py"
_MAIA_LOGIC = "tests/recipes/maia/test_maia_logic.py"
_MAIA_POOLS = "tests/recipes/maia/test_maia_pool_flow.py"
_MAIA_LANGUAGE = "tests/recipes/maia/test_maia_language.py"
_VAGUE = "tests/recipes/vague/test_vague_assets.py"
_VAGUE_LOGIC = "tests/recipes/vague/test_vague_logic.py"
_VAGUE_STUB = "tests/recipes/vague/test_vague_stub.py"
_IIBENCH = "tests/recipes/iibench/test_iibench_assets.py"
_IIBENCH_STUB = "tests/recipes/iibench/test_iibench_stub.py"
_HUMMUS = "tests/recipes/hummus/test_hummus_assets.py"
_VIMU = "tests/recipes/vimu/test_assets.py"
_PARSERS = "tests/releases/test_parsers.py"
_SOURCES = "tests/ingest/test_sources.py"
_DOWNLOAD = "tests/ingest/test_download.py"
_HOSTILE = "tests/security/test_inbox_hostile.py"

# The recipes' stages (assets under assets/recipes/<paper>/).
RECIPE_STAGES: dict[str, dict[str, str]] = {
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
        "pool_contradiction": E2E,
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
    "human_review": {  # forge/review/stages.py: the reviewer's own reason leads the detail
        "reviewer_rejected": "tests/review/test_review_flow.py",
    },
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

# Shared stages: the media trunk, filters, vision, releases and the gates before export.
SHARED_STAGES: dict[str, dict[str, str]] = {
    "sources": {  # source declarations and the inbox (forge/media/sources.py, inbox.py, policy.py)
        "invalid_yaml": _HOSTILE,
        "invalid_source": _SOURCES,
        "unresolved_variable": _SOURCES,
        "variable_not_allowed": _HOSTILE,
        "duplicate_source": UNTESTED,
        "listed_twice": _SOURCES,
        "max_items": _SOURCES,
        "too_many_files": UNTESTED,
        "too_many_urls": UNTESTED,
        "missing_path": UNTESTED,
        "missing_image": _SOURCES,
        "unreadable_table": UNTESTED,
        "license": _DOWNLOAD,
        "too_long": _DOWNLOAD,
        "address_not_allowed": "tests/security/test_network.py",
        "unsupported_url": "tests/security/test_network.py",
        "unresolvable_host": UNTESTED,
        "missing_file": "tests/vision/test_images.py",
        "not_a_regular_file": _HOSTILE,
        "path_outside_roots": _HOSTILE,
        "symlink_escape": _HOSTILE,
        "too_large": _HOSTILE,
        # yt-dlp / network failures (forge.media.sources.classify_error)
        "not_found": _SOURCES,
        "private": _SOURCES,
        "geo_blocked": _SOURCES,
        "removed": _SOURCES,
        "timeout": _SOURCES,
        "unavailable": UNTESTED,
        "connection_failed": _DOWNLOAD,
        "download_failed": _SOURCES,
    },
    "videos": {  # downloads and probes (forge/media/download.py, images.py, batch.py)
        "unknown_source": UNTESTED,
        "playlist_url": UNTESTED,
        "live_stream": UNTESTED,
        "no_metadata": UNTESTED,
        "no_video_stream": UNTESTED,
        "too_many_frames": "tests/security/test_files_and_weights.py",
        "empty_file": _DOWNLOAD,
        "too_small": "tests/ingest/test_frames_images.py",
        "decode_error": _DOWNLOAD,
    },
    "clips": {"clip_failed": UNTESTED},
    "frames": {"blurry": "tests/ingest/test_frames_images.py"},
    "duplicates": {"duplicate": "tests/filters/test_assets.py"},
    "text_ratio": {"ocr_error": UNTESTED, "text_heavy": "tests/filters/test_assets.py"},
    "transcripts": {
        "audio_missing": UNTESTED,
        "audio_extraction_failed": UNTESTED,
        "transcription_failed": "tests/ingest/test_transcripts.py",
    },
    "<benchmark>_gated": {  # forge/splits/stages.py run_gates
        "empty_field": "tests/splits/test_gates_logic.py",
        "contract_violation": "tests/splits/test_gates_logic.py",
        "media_missing": "tests/splits/test_gates_logic.py",
        "duplicate_item": UNTESTED,
    },
    "<benchmark>_release": {  # imported releases (forge/recipes/<paper>/release.py, forge/releases)
        "unreadable_file": UNTESTED,
        "unparsable_record": UNTESTED,
        "media_missing": _PARSERS,
        "video_unreadable": UNTESTED,
        "missing_field": _PARSERS,
        "missing_id": UNTESTED,
        "missing_caption": _PARSERS,
        "missing_video_id": _PARSERS,
        "missing_category": UNTESTED,
        "missing_question": _PARSERS,
        "missing_answers": UNTESTED,
        "missing_statement": UNTESTED,
        "identical_statements": _PARSERS,
        "bad_target": _PARSERS,
        "bad_answer": _PARSERS,
        "bad_ordering": _PARSERS,
        "no_gold_answer": _PARSERS,
        "malformed_question": UNTESTED,
        "incomplete_options": _PARSERS,
        "unknown_task": UNTESTED,
        "duplicate_id": UNTESTED,
        "duplicate_record": UNTESTED,
        "duplicate_question_id": UNTESTED,
        "duplicate_statement_pair": UNTESTED,
        # the Hummus annotation checks, applied to imported annotations
        "bad_verdict": _PARSERS,
        "missing_annotation": UNTESTED,
        "bad_metaphor_format": _PARSERS,
        "box_out_of_bounds": UNTESTED,
        "invalid_span": _PARSERS,
        "explanation_too_long": _PARSERS,
        "unknown_device": _PARSERS,
    },
}

STAGES: dict[str, dict[str, str]] = RECIPE_STAGES | SHARED_STAGES


def declared() -> set[str]:
    """Every declared reason code."""
    return {code for reasons in STAGES.values() for code in reasons}


def e2e_reasons() -> set[tuple[str, str]]:
    """(stage, reason) pairs the end-to-end run over HTTP must show."""
    return {(stage, code) for stage, reasons in RECIPE_STAGES.items() for code, how in reasons.items() if how == E2E}
