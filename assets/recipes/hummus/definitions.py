"""Hummus recipe assets (group ``hummus``): image-caption pairs → annotations → task items."""

import dagster as dg

from .assets import hummus_annotations, hummus_items, hummus_pairs
from .checks import CHECKS

defs = dg.Definitions(assets=[hummus_pairs, hummus_annotations, hummus_items], asset_checks=CHECKS)
