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

from forge.benchmarks.review_spec import Media, Regenerate, ReviewSpec
from forge.benchmarks.spec import BenchmarkSpec, BlindAction, BlindPolicy, EvalSpec, OptionPolicy, PaperCard

from .logic.evaluation import build_request, parse_reply
from .logic.gold import GOLD
from .logic.release import parse_release
from .logic.report import plots, prediction_tables
from .logic.scoring import judge_failed_call, judge_variables, read_judgement, score_setting
from .rejects import REJECTS

SPEC = BenchmarkSpec(
    name="vimu",
    importer=parse_release,  # the published release (docs/releases.md)
    title="ViMU",
    group="vimu",
    recipe_assets=("vimu_annotations", "vimu_questions", "vimu_items"),
    options=OptionPolicy.FIXED,
    blind=BlindPolicy(action=BlindAction.REPORT),
    package=__package__,  # config.yaml, contracts/, evals.yaml, eval_prompts/, README.md beside this file
    rejects=REJECTS,
    gold=GOLD,  # human gold from its release (logic/gold.py)
    review=ReviewSpec(
        media=Media.VIDEO,
        reviewers=5,
        editable=("question", "options", "answer"),
        note="ViMU §3 'Filtering and Quality Control': the dataset is finally validated by 5 human experts (read here as five reviewers per item; the paper does not say how the work was divided).",
        # "regenerate rejected": a clip's question (all four of its items) is asked again
        regenerate=Regenerate(stage="vimu_questions", key="unit_id"),
    ),
    eval=EvalSpec(
        kinds={"open_ended": "text", "multi_select": "multi"},
        build_request=build_request,
        parse_reply=parse_reply,
        score_setting=score_setting,
        primary_metric="All-Avg",
        judge_prompt="vimu_oe_judge.yaml",
        # 01-vimu_oe_judge.py: every reply that came back is judged (an empty one too), the judge
        # states a raw total −6..9, and an inference error gets −1 without a judge call.
        judge_unparseable=True,
        judge_variables=judge_variables,
        read_judgement=read_judgement,
        judge_failed_call=judge_failed_call,
        report_tables={"tasks": ("OE", "EG", "RM", "SV", "SSU-Avg", "All-Avg")},
        report_plots=plots,
        report_prediction_tables=prediction_tables,
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
