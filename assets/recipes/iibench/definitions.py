"""II-Bench recipe assets (group ``iibench``): implication filter → labels → items."""

import dagster as dg

from .assets import iibench_implication, iibench_items, iibench_labels
from .checks import CHECKS

defs = dg.Definitions(assets=[iibench_implication, iibench_labels, iibench_items], asset_checks=CHECKS)
