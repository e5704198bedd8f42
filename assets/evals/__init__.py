"""Model evaluations (group ``evals``): one asset per benchmark partitioned by model, one report per benchmark."""

from assets.evals.assets import build_defs

defs = build_defs()
