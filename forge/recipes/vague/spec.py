"""VAGUE as a registered benchmark.

* Option policy **balance**: the four choices (the true intent and the FS / SU / NE
  counterfactuals, §4.2.3) are an unordered set; option types move with their options.
* Blind filter **drop**, unit **item**: an indirect expression must be ambiguous without
  the scene (§3.2.2 "Indirectness: Consistency and Ambiguity"); an item a text-only model
  solves far above chance fails that requirement. The LM setting of §5.1 still measures
  text-only accuracy on what remains.
* Evaluation: §5.1 LM / SM / VLM settings; error composition by counterfactual type (§5.2).
"""

from __future__ import annotations

from forge.benchmarks.spec import BenchmarkSpec, BlindAction, BlindPolicy, BlindUnit, EvalSpec, OptionPolicy
from forge.evals.scoring import _score_vague
from forge.recipes.vague.evaluation import build_request

SPEC = BenchmarkSpec(
    name="vague",
    title="VAGUE",
    group="vague",
    recipe_assets=("vague_candidates", "vague_direct", "vague_indirect", "vague_options", "vague_items"),
    options=OptionPolicy.BALANCE,
    blind=BlindPolicy(action=BlindAction.DROP, unit=BlindUnit.ITEM),
    doc="docs/recipes/vague.md",
    eval=EvalSpec(
        kinds={"mcq": "mcq"},
        build_request=build_request,
        score_setting=_score_vague,
        primary_metric="accuracy",
        circular=True,
        report_slices=(("accuracy", "category"),),
        report_tables={"errors": ("errors_FS", "errors_SU", "errors_NE")},
    ),
)
