"""Hummus as a registered benchmark.

* Option policy **fixed**: the Classification prompt asks for Yes or No (§6, Table 1) and
  is scored with F1 per class (Table 2); the scorer reads option A as Yes, so moving the
  options would swap the classes. (§6.2's randomised "A or B" order is a prompt variant.)
* Text-only probe **report**, unit **item**: the paper measures caption-only identifiability
  with a text-only detector and reports it as evidence of multimodality (§5 "Multimodality
  of the metaphor samples") rather than filtering on it; the text-only solver's figures are
  reported the same way.
* Evaluation: the six Table 1 tasks, thresholds of §6.1 (0.6 similarity, IoU 0.5, ROUGE-1
  0.35 / ROUGE-2 0.087), and the §6.3 ablation with a textual description of the image.
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
)

from .hooks import HummusHooks
from .logic.gold import GOLD
from .logic.protocol import STEPS
from .rejects import REJECTS

PAIR, PAIR_WORDS = "extra.annotation_id", "pair (this caption of the cartoon)"

SPEC = BenchmarkSpec.of_package(
    name="hummus",
    title="Hummus",
    group="hummus",
    recipe_assets=("hummus_pairs", "hummus_annotations", "hummus_items"),
    options=OptionPolicy.FIXED,
    blind=BlindPolicy(action=BlindAction.REPORT, unit=BlindUnit.ITEM),
    hooks=HummusHooks(),  # its behaviour: hooks.py, delegating to logic/
    package=__package__,  # config.yaml, contracts/, evals.yaml, eval_prompts/, README.md beside this file
    rejects=REJECTS,
    gold=GOLD,  # human gold from its release (logic/gold.py)
    human_steps=STEPS,  # §4: the expert writes the annotation, the LLM's draft hidden (logic/protocol.py)
    review=ReviewSpec(
        media=Media.IMAGE,
        reviewers=1,
        editable=("question", "answer", "box"),
        boxes=True,
        # the review unit is the pair (§3: one annotation of a cartoon and caption, and the items made
        # from it): one task shows them all, the annotation's boxes drawn once; the export takes it whole
        unit="extra.annotation_id",
        # §4.1-4.2: the pair's items are different tasks (the verdict, then metaphors, devices, span,
        # explanation, boxes) the expert answers one by one: each member needs its own answer
        member_answers=MemberAnswers.REQUIRED,
        note="Hummus §3 and Limitations: one expert linguist annotates every item, boxes included; one reviewer per item.",
        # what each reject reason does next (forge/review/consequences.py); key: the cartoon
        consequences={
            # §4: one annotation per pair holds every gold (verdict, metaphors, boxes, span,
            # explanation); a reviewed verdict is kept when it is written again (logic/annotations.py)
            "wrong_gold": Consequence(Action.REGENERATE, "hummus_annotations"),
            "ambiguous": Consequence(Action.REGENERATE, "hummus_annotations"),
            # §4.1: a pair unfit for annotation is tagged "Discard" and leaves the benchmark: the pair,
            # not the cartoon (its other captions are pairs of their own); a fault of the cartoon
            # itself (a broken image, offensive or private content) takes every pair of it
            "no_implicit_meaning": Consequence(Action.DROP_SOURCE, key=PAIR, names=PAIR_WORDS),
            "needs_outside_knowledge": Consequence(Action.DROP_SOURCE, key=PAIR, names=PAIR_WORDS),
            "bad_media": Consequence(Action.DROP_SOURCE),
            "offensive_or_private": Consequence(Action.DROP_SOURCE),
            "other": Consequence(Action.DROP_ITEM),
        },
        # an edited Classification is the pair's verdict: labels follow, a No pair loses its details (§4.2)
    ),
    eval=EvalSpec(
        kinds={
            "classification": "yesno",
            "naming": "naming",
            "image_box": "box",
            "image_label": "word",
            "caption_highlight": "highlight",
            "explanation": "text_not_question",
        },
        unparseable_is_wrong=True,
        similarity_is_score=True,
        primary_metric="f1_avg",
        similarity=True,
        report_tables={"all_metrics": ()},
        multi_label=(),  # slices are tasks, one per item (hummus_dataset.json)
        # model_evaluation/multimodal.py (a_or_b.py for CLAS11): the image part, then the text
        part_order={
            "*": PartOrder(ImagePlacement.BEFORE_TEXT, "Hummus model_evaluation/multimodal.py query_answer"),
            "clas_a_or_b": PartOrder(ImagePlacement.BEFORE_TEXT, "Hummus model_evaluation/a_or_b.py query_answer"),
        },
    ),
    paper=PaperCard(
        "@article{tong2025hummus,\n  title={Hummus: A Dataset of Humorous Multimodal Metaphor Use},\n"
        "  author={Tong, Xiaoyu and Zhang, Zhi and Lewis, Martha and Shutova, Ekaterina},\n"
        "  journal={arXiv preprint arXiv:2504.02983},\n  year={2025}\n}",
        "Humorous multimodal metaphor use in image-caption pairs: whether a pair uses one, its TARGET IS SOURCE "
        "metaphor, the metaphor-related image regions and caption spans, and why it is funny (the six tasks of "
        "Hummus Table 1).",
        "Annotations are made by an LLM following the paper's scheme, not by the paper's trained annotators.",
    ),
)
