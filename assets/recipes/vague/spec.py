"""VAGUE as a registered benchmark.

* Option policy **balance**: the four choices (the true intent and the FS / SU / NE
  counterfactuals, §4.2.3) are an unordered set; option types move with their options.
* Text-only probe **report**, unit **item**: VAGUE reports text-only (LM) accuracy on its
  whole set (§5.1, Table 1 LM rows) and drops nothing for it, so the probe's figures are
  reported; dropping is the opt-in ``blind.action: drop`` (docs/splits.md).
* Evaluation: §5.1 LM / SM / VLM settings, §5.4 CoT and App. I free-form settings (inputs and
  reply reading of the official utils/util.py); error composition by counterfactual type (§5.2).
"""

from __future__ import annotations

from forge.benchmarks.review_spec import Action, Consequence, Media, MemberAnswers, ReviewSpec
from forge.benchmarks.spec import (
    BenchmarkSpec,
    BlindAction,
    BlindPolicy,
    BlindUnit,
    EvalSpec,
    ImagePlacement,
    OptionPolicy,
    PaperCard,
    PartOrder,
    TextReference,
)

from .hooks import VagueHooks
from .logic.protocol import STEPS
from .rejects import REJECTS

SPEC = BenchmarkSpec.of_package(
    name="vague",
    title="VAGUE",
    group="vague",
    recipe_assets=("vague_candidates", "vague_direct", "vague_indirect", "vague_options", "vague_items"),
    options=OptionPolicy.BALANCE,
    blind=BlindPolicy(action=BlindAction.REPORT, unit=BlindUnit.ITEM),
    hooks=VagueHooks(),  # its behaviour: hooks.py, delegating to logic/
    package=__package__,  # config.yaml, contracts/, evals.yaml, eval_prompts/, README.md beside this file
    rejects=REJECTS,
    review=ReviewSpec(
        media=Media.IMAGE,
        reviewers=1,
        editable=("question", "options", "answer"),
        unit=None,  # the review unit is the item itself (§3.2: each image's question is rated on its own)
        member_answers=MemberAnswers.UNIT_COVERS,  # a unit of one item has no members to answer
        note="VAGUE §3.2 / Fig. 3: every generated expression and candidate is rated and filtered by human raters (the count per item is not given: one reviewer); human accuracy 94% on a 400-item subset (§5.3).",
        # what each reject reason does next (forge/review/consequences.py); key: the image
        consequences={
            # §4.2.1: the correct option is the true intent T, written with the direct expression (vague_direct)
            "wrong_gold": Consequence(Action.REGENERATE, "vague_direct"),
            # §3.2.2 / §4.2.2: the indirect expression must fit T, stay ambiguous without the image and
            # not state T (consistency, ambiguity; people select and rate it): vague_indirect writes it
            "ambiguous": Consequence(Action.REGENERATE, "vague_indirect"),
            "no_implicit_meaning": Consequence(Action.REGENERATE, "vague_indirect"),
            # §4.1 visual data curation: an unusable image leaves with its item
            "needs_outside_knowledge": Consequence(Action.DROP_SOURCE),
            "bad_media": Consequence(Action.DROP_SOURCE),
            "offensive_or_private": Consequence(Action.DROP_SOURCE),
            "other": Consequence(Action.DROP_ITEM),
        },
    ),
    # §4.2.1 direct ratings, §4.2.2 indirect selection and rating: people correct the LLM judge's (logic/protocol.py)
    human_steps=STEPS,
    eval=EvalSpec(
        kinds={"mcq": "mcq"},
        primary_metric="accuracy",
        circular=True,
        text_metrics=True,  # App. I free-form answers: BLEU / METEOR / ROUGE-L / BERTScore vs the correct option
        text_reference=TextReference.CORRECT_OPTION,
        report_slices=(("accuracy", "category"),),
        report_tables={"errors": ("correct_count", "errors_FS", "errors_SU", "errors_NE")},
        multi_label=(),  # category / subset / source: one value per item in the release
        # the text part, then the image (captioning and answering alike)
        part_order={"*": PartOrder(ImagePlacement.AFTER_TEXT, "VAGUE models/gpt.py run_gpt")},
    ),
    paper=PaperCard(
        "@inproceedings{nam2025vague,\n  title={VAGUE: Visual Contexts Clarify Ambiguous Expressions},\n"
        "  author={Nam, Heejeong and Ahn, Jinwoo and Ka, Keummin and Chung, Jiwan and Yu, Youngjae},\n"
        "  booktitle={ICCV},\n  year={2025},\n  note={arXiv:2411.14137}\n}",
        "Whether the image disambiguates an indirect, ambiguous utterance: four options (the intention and "
        "counterfactual FS / SU / NE options) whose answer needs the visual context (VAGUE §4).",
        "Scenes and persons come from an object detector; utterances and options are LLM-generated.",
    ),
)
