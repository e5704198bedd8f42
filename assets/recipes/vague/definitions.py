"""VAGUE recipe (Nam et al.): frames with person indicators → direct expression + triple →
indirect expression → counterfactual options FS / SU / NE → 4-option MCQ items."""

import dagster as dg

from .assets import vague_candidates, vague_direct, vague_indirect, vague_items, vague_options
from .checks import CHECKS

defs = dg.Definitions(
    assets=[vague_candidates, vague_direct, vague_indirect, vague_options, vague_items],
    asset_checks=CHECKS,
)
