"""ViMU recipe (group ``vimu``): annotations → hint-free questions (refine loop) → items.

See assets/recipes/vimu/README.md. Assets in ``assets.py``, standalone checks in ``checks.py``.
"""

import dagster as dg

from .assets import vimu_annotations, vimu_items, vimu_questions
from .checks import CHECKS

defs = dg.Definitions(assets=[vimu_annotations, vimu_questions, vimu_items], asset_checks=CHECKS)
