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

from forge.benchmarks import registry
from forge.benchmarks.spec import E2E, UNTESTED

_PARSERS = "tests/releases/test_parsers.py"
_SOURCES = "tests/ingest/test_sources.py"
_DOWNLOAD = "tests/ingest/test_download.py"
_HOSTILE = "tests/security/test_inbox_hostile.py"

# The recipes' stages: each paper declares its own (assets/recipes/<paper>/rejects.py, ``BenchmarkSpec.rejects``).
RECIPE_STAGES: dict[str, dict[str, str]] = {
    stage: reasons for spec in registry.specs() for stage, reasons in spec.rejects.items()
}

# Shared stages: the media trunk, filters, vision, releases and the gates before export.
SHARED_STAGES: dict[str, dict[str, str]] = {
    "human_review": {  # forge/review/stages.py: the reviewer's own reason leads the detail
        "reviewer_rejected": "tests/review/test_review_flow.py",
    },
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
        "bad_line": _SOURCES,  # one line of a table source (issue #55)
        "invalid_path": _SOURCES,
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
    "<benchmark>_gated": {  # forge/gates/stages.py run_gates
        "empty_field": "tests/splits/test_gates_logic.py",
        "contract_violation": "tests/splits/test_gates_logic.py",
        "media_missing": "tests/splits/test_gates_logic.py",
        "duplicate_item": UNTESTED,
    },
    "<benchmark>_release": {  # imported releases (assets/recipes/<paper>/logic/release.py, forge/releases)
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
        # a paper's own annotation checks, applied to its imported annotations
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
