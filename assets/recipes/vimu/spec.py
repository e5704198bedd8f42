"""ViMU as a registered benchmark.

* Option policy **fixed**: the A–E options of RM, SV and EG are the taxonomy groups in a
  fixed order (App. C, D), and the paper's option-affinity analysis reads letters as
  categories (§4, Fig. 9; App. H). Re-shuffling would mix two orders in one export.
* Text-only probe **report**: the paper has no text-only filter, and the RM / SV / EG question
  text is the same for every item (App. G), so a "solvable" verdict means "the gold equals the
  solver's favourite options"; the figures are reported as a text-only baseline, never dropped.
* Evaluation: App. G guided / unguided prompts, App. B judge for OE, §4 task averages
  (SSU-Avg, All-Avg) and the affinity / co-occurrence plots.
"""

from __future__ import annotations

from forge.benchmarks.review_spec import Action, Consequence, Media, MemberAnswers, ReviewSpec
from forge.benchmarks.spec import (
    BenchmarkSpec,
    BlindAction,
    BlindPolicy,
    EvalSpec,
    ImagePlacement,
    OptionPolicy,
    PaperCard,
    PartOrder,
)

from .hooks import VimuHooks
from .logic.gold import GOLD
from .rejects import REJECTS

SPEC = BenchmarkSpec.of_package(
    name="vimu",
    title="ViMU",
    group="vimu",
    recipe_assets=("vimu_annotations", "vimu_questions", "vimu_items"),
    options=OptionPolicy.FIXED,
    blind=BlindPolicy(action=BlindAction.REPORT),
    hooks=VimuHooks(),  # its behaviour: hooks.py, delegating to logic/
    package=__package__,  # config.yaml, contracts/, evals.yaml, eval_prompts/, README.md beside this file
    rejects=REJECTS,
    gold=GOLD,  # human gold from its release (logic/gold.py)
    review=ReviewSpec(
        media=Media.VIDEO,
        reviewers=5,
        editable=("question", "options", "answer"),
        # the review unit is the clip (App. A 'Filtering and Quality Control': 5 experts validate the
        # dataset of 588 videos): one task shows a clip's OE, EG, RM and SV items; the export takes it whole
        unit="unit_id",
        # App. A Filtering and Quality Control: the dataset (its clips) is validated, no step per question
        member_answers=MemberAnswers.UNIT_COVERS,
        note="ViMU §3 'Filtering and Quality Control': the dataset is finally validated by 5 human experts (read here as five reviewers per item; the paper does not say how the work was divided).",
        # what each reject reason does next (forge/review/consequences.py); key: the clip
        consequences={
            # App. A Stage 2: the RM / SV / EG gold are the annotation's taxonomy labels (Stage 5 builds
            # the choice items from them); the OE reference answer is Stage 3's. Only the faulted task's
            # labels are replaced: the clip's question and its OE item stay as reviewed (logic/annotate.py)
            "wrong_gold": Consequence(Action.REGENERATE, "vimu_annotations", by_category={"OE": "vimu_questions"}),
            # §3 "Filtering and Quality Control": videos that "exhibit ambiguous semantics" or "require
            # strong external context" are filtered out, as are unusable ones: the clip leaves
            "ambiguous": Consequence(Action.DROP_SOURCE),
            "needs_outside_knowledge": Consequence(Action.DROP_SOURCE),
            "no_implicit_meaning": Consequence(Action.DROP_SOURCE),  # §3 (i)-(ii): subtext is the point
            "bad_media": Consequence(Action.DROP_SOURCE),
            "offensive_or_private": Consequence(Action.DROP_SOURCE),
            "other": Consequence(Action.DROP_ITEM),
        },
    ),
    eval=EvalSpec(
        kinds={"open_ended": "text", "multi_select": "multi"},
        primary_metric="All-Avg",
        judge_prompt="vimu_oe_judge.yaml",
        # 01-vimu_oe_judge.py: every reply that came back is judged (an empty one too), the judge
        # states a raw total −6..9, and an inference error gets −1 without a judge call.
        judge_unparseable=True,
        report_tables={"tasks": ("OE", "EG", "RM", "SV", "SSU-Avg", "All-Avg")},
        multi_label=(),  # slices are tasks, one per question
        # the text part, then up to 8 frames (call_openai_compatible_model of each script)
        part_order={
            "*": PartOrder(
                ImagePlacement.AFTER_TEXT,
                "ViMU scripts/00-vimu_oe.py, 10-vimu_eg.py, 20-vimu_ss.py call_openai_compatible_model",
            )
        },
    ),
    paper=PaperCard(
        "@article{li2026vimu,\n  title={ViMU: Benchmarking Video Metaphorical Understanding},\n"
        "  author={Li, Qi and Wang, Xinchao},\n  journal={arXiv preprint arXiv:2605.14607},\n  year={2026}\n}",
        "Whether a video model recovers a clip's subtext (irony, mockery, social critique, culturally coded "
        "references) without hints: open-ended interpretation, evidence grounding, rhetoric / macro-category "
        "multiple choice and social-value signal identification (ViMU §3).",
        "Clips are ~30 s segments; the taxonomy labels are LLM annotations, not the paper's human ones.",
    ),
)
