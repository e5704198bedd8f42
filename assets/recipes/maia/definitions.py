"""MAIA recipe (maia.md): questions → answer pools → true statements → foils → items."""

import dagster as dg

from .assets import maia_answer_pools, maia_foils, maia_items, maia_questions, maia_statements
from .checks import CHECKS

defs = dg.Definitions(
    assets=[maia_questions, maia_answer_pools, maia_statements, maia_foils, maia_items],
    asset_checks=CHECKS,
)
