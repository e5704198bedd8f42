"""MAIA's public release (Italian questions, 8-answer pools, true/false statement pairs)."""

from assets.releases.factory import release_defs
from forge.benchmarks.settings import recipe_settings
from forge.releases.media import sample_frames

from .logic.release import parse_release

# MAIA's published pool figures (assets/recipes/maia/config.yaml `reference`), as rows of the report
REFERENCE_ROWS = {
    "answers_overlap_mean": "answer_pool/overlap_mean",
    "answers_overlap_mean_cw": "answer_pool/overlap_mean_cw",
    "answers_ttr": "answer_pool/ttr",
    "answers_ttr_cw": "answer_pool/ttr_cw",
    "statements_overlap_mean": "statement_pool/overlap_mean",
    "statements_ttr_cw": "statement_pool/ttr_cw",
}


def reference() -> dict[str, float]:
    ref = recipe_settings("maia").get("reference") or {}
    return {row: float(ref[k]) for k, row in REFERENCE_ROWS.items() if k in ref}


defs = release_defs(
    "maia",
    parse_release,
    reference,
    finish=lambda parsed, data_dir: sample_frames(
        parsed, data_dir, int(recipe_settings("maia").get("release_frames", 32))
    ),
)
