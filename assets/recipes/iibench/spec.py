"""II-Bench as a registered benchmark.

* Option policy **balance**: one correct option and five distractors per question (§3.2
  "Data Annotation"); their order carries no meaning.
* Text-only probe **report**, unit **item**: II-Bench has no text-only filter (its §3.2 curation
  filters images by text-to-image ratio and implication, never questions by a text-only model),
  so the probe's figures are reported on the card and in the blind_* columns; dropping is the
  opt-in ``blind.action: drop`` (docs/splits.md).
* Splits: dev 15 / validation 20 / rest test (§3.3, Table 1), kept in
  ``assets/recipes/iibench/config.yaml`` ``splits:``; few-shot examples come from dev (App. C.2).
* Evaluation: the eight prompt settings of App. C; accuracy by domain, emotion, image
  type, difficulty and rhetoric (§4.2.3, App. D).
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

from .hooks import IIBenchHooks
from .logic.protocol import STEPS
from .rejects import REJECTS

SPEC = BenchmarkSpec.of_package(
    name="iibench",
    title="II-Bench",
    group="iibench",
    recipe_assets=("iibench_implication", "iibench_labels", "iibench_items"),
    options=OptionPolicy.BALANCE,
    blind=BlindPolicy(action=BlindAction.REPORT, unit=BlindUnit.ITEM),
    hooks=IIBenchHooks(),  # its behaviour: hooks.py, delegating to logic/
    package=__package__,  # config.yaml, contracts/, evals.yaml, eval_prompts/, README.md beside this file
    rejects=REJECTS,
    review=ReviewSpec(
        media=Media.IMAGE,
        reviewers=3,
        # the human baseline: three people answer each test question (Appendix, Quality Control: three
        # annotators per question), so human (avg) / (best) stand on people who share the items
        human_answers=3,
        editable=("question", "options", "answer"),
        # the review unit is the image (§3.2 Data Annotation: 1-3 questions per image with its labels;
        # Appendix, Quality Control: each validated by three annotators): one task shows them all
        unit="unit_id",
        # Appendix, Quality Control: "each question was manually validated": each member its own answer
        member_answers=MemberAnswers.REQUIRED,
        note="II-Bench Appendix (Quality Control): each question was manually validated by at least three annotators and inconsistencies were resolved together (adjudication).",
        # what each reject reason does next (forge/review/consequences.py); key: the image
        consequences={
            # §3.2 "Data Annotation" / App. B: questions with "only one correct answer and five
            # distractor options" are written per image: a wrong or second defensible answer is that stage's
            "wrong_gold": Consequence(Action.REGENERATE, "iibench_items"),
            "ambiguous": Consequence(Action.REGENERATE, "iibench_items"),
            # §3.2 "Data Filtration" Stage 3: human inspection discards images "lacking pertinent
            # metaphorical or suggestive implications" and "irrelevant and poor-quality images"
            "no_implicit_meaning": Consequence(Action.DROP_SOURCE),
            "needs_outside_knowledge": Consequence(Action.DROP_SOURCE),
            "bad_media": Consequence(Action.DROP_SOURCE),
            "offensive_or_private": Consequence(Action.DROP_SOURCE),
            "other": Consequence(Action.DROP_ITEM),
        },
    ),
    # §3.2 Stage 3 inspection, then App. B.2 labels: people correct the LLM's (logic/protocol.py)
    human_steps=STEPS,
    eval=EvalSpec(
        kinds={"mcq": "mcq"},
        primary_metric="accuracy",
        circular=True,
        report_slices=tuple(("accuracy", k) for k in ("domain", "emotion", "image_type", "difficulty", "rhetoric")),
        # data/test.json meta_data lists one or more image types and rhetoric devices per image;
        # Tables 6 / 7 count a question under each (their columns sum past 1,399)
        multi_label=("image_type", "rhetoric"),
        # API models: infer/models/gpt4v.py make_content (the text part, then each image)
        part_order={"*": PartOrder(ImagePlacement.AFTER_TEXT, "II-Bench infer/models/gpt4v.py make_content")},
    ),
    paper=PaperCard(
        "@inproceedings{liu2024iibench,\n  title={II-Bench: An Image Implication Understanding Benchmark for "
        "Multimodal Large Language Models},\n  author={Liu, Ziqiang and Fang, Feiteng and Feng, Xi and Du, Xinrun "
        "and Zhang, Chenhao and others},\n  booktitle={NeurIPS 2024 Datasets and Benchmarks Track},\n  year={2024},\n"
        "  note={arXiv:2406.05862}\n}",
        "Whether a model grasps what an image implies beyond what it shows: single-answer six-option questions "
        "per image, with labels for image type, domain, emotion, rhetoric and difficulty (II-Bench §3, App. B).",
        "The implication filter is an LLM judge standing in for the paper's human inspection (with a human "
        "override table); distractors are generated and checked, not written by annotators.",
    ),
)
