"""ViMU recipe (group ``vimu``): annotations → hint-free questions (refine loop) → items.

See docs/recipes/vimu.md. Assets in ``assets.py``, standalone checks in ``checks.py``.
"""

import dagster as dg

from assets.recipes.vimu.assets import vimu_annotations, vimu_items, vimu_questions
from assets.recipes.vimu.checks import CHECKS

defs = dg.Definitions(assets=[vimu_annotations, vimu_questions, vimu_items], asset_checks=CHECKS)
