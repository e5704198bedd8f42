"""II-Bench as a registered benchmark.

* Option policy **balance**: one correct option and five distractors per question (§3.2
  "Data Annotation"); their order carries no meaning.
* Blind filter **drop**, unit **item**: the curation keeps the benchmark visually dominant
  (§3.2 "Data Filtration", stage 2 text-to-image ratio; stage 3 discards images without an
  implication); a question a text-only model answers far above chance does not test the
  image, so it is dropped.
* Splits: dev 15 / validation 20 / rest test (§3.3, Table 1), kept in
  ``config/recipes/iibench.yaml`` ``splits:``; few-shot examples come from dev (App. C.2).
* Evaluation: the eight prompt settings of App. C; accuracy by domain, emotion, image
  type, difficulty and rhetoric (§4.2.3, App. D).
"""

from __future__ import annotations

from forge.benchmarks.spec import BenchmarkSpec, BlindAction, BlindPolicy, BlindUnit, EvalSpec, OptionPolicy
from forge.recipes.iibench.evaluation import build_request, parse_reply
from forge.recipes.iibench.release import parse_release
from forge.recipes.iibench.scoring import score_setting

SPEC = BenchmarkSpec(
    name="iibench",
    importer=parse_release,  # the published release (docs/releases.md)
    title="II-Bench",
    group="iibench",
    recipe_assets=("iibench_implication", "iibench_labels", "iibench_items"),
    options=OptionPolicy.BALANCE,
    blind=BlindPolicy(action=BlindAction.DROP, unit=BlindUnit.ITEM),
    doc="docs/recipes/iibench.md",
    eval=EvalSpec(
        kinds={"mcq": "mcq"},
        build_request=build_request,
        parse_reply=parse_reply,
        score_setting=score_setting,
        primary_metric="accuracy",
        circular=True,
        report_slices=tuple(("accuracy", k) for k in ("domain", "emotion", "image_type", "difficulty", "rhetoric")),
    ),
)
