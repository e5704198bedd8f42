"""MAIA as a registered benchmark.

* Option policy **balance**: a Task 1 item is one true/false statement pair (§4.1); which
  statement comes first carries no meaning, so positions may be balanced.
* Text-only probe **report**, unit **pool** (``question_id``): the paper keeps pairs a
  language model alone gets right and instead reports a *unimodal* baseline (§4.3
  "Unimodal"), and scores a question only when all 8 pairs of its pool are right (§5.1,
  §6 Agg-Acc). Dropping single pairs would break pools, so the text-only test judges a
  pool (a trial counts only when every pair is right) and reports it; nothing is dropped.
* Split/gate unit **pool**: the 8 TS/FS pairs of a question and its open question stay
  together (§3, Fig. 2: 2 questions × 12 categories × 8 answers per video); a gate that
  removes one member removes the pool.
* Evaluation: §4.3 settings (black video, 1 frame, 32 frames); prompts, the A/B reading and the
  judge of the official repository (Caput97/MAIA-Multimodal_AI_Assessment: eval_model.py,
  compute_mc_scores.py, compute_llm-as-a-judge.py); pool consistency and the primary metric
  Agg-Acc from the paper (§5.1, §6; the repository has no code for them).
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
    SplitPolicy,
)

from .hooks import MaiaHooks
from .logic.gold import GOLD
from .logic.protocol import STEPS
from .logic.unimodal import UNIMODAL
from .rejects import REJECTS

SPEC = BenchmarkSpec.of_package(
    name="maia",
    title="MAIA",
    group="maia",
    recipe_assets=("maia_questions", "maia_answer_pools", "maia_statements", "maia_foils", "maia_items"),
    options=OptionPolicy.BALANCE,
    blind=BlindPolicy(action=BlindAction.REPORT, unit=BlindUnit.POOL),
    split=SplitPolicy(unit_key="question_id"),
    hooks=MaiaHooks(),  # its behaviour: hooks.py, delegating to logic/
    package=__package__,  # config.yaml, contracts/, evals.yaml, eval_prompts/, README.md beside this file
    rejects=REJECTS,
    human_steps=STEPS,  # §3.1: eight people answer each question, screened by the control questions
    gold=GOLD,  # human gold from its release (logic/gold.py)
    review=ReviewSpec(
        media=Media.VIDEO,
        reviewers=1,
        editable=("question", "options", "answer"),
        note="MAIA §3: a manual review checked every question against the guidelines and its category, and an additional annotator resolved the 9.75% of answer pools with contradictions (fn. 7); one reviewer per item.",
        # the review unit is the pool (§3: the question, its 8 answers, 8 true/false pairs): one task,
        # the export takes 8 pairs or none; a contradicting pool goes to another annotator first
        # (adjudication, fn. 7); an edited pair passes the foil stage's own checks (logic/review.py)
        unit="labels.question_id",
        unit_question="extra.maia_question",  # the pool's open question, which every pair carries
        # §3: the manual review checked each question (the pool's); its answers, statements and foils
        # passed semi-automatic checks, hand-fixed where flagged: the pool's verdict covers them
        member_answers=MemberAnswers.UNIT_COVERS,
        adjudicate_flags=("pool_contradiction",),
        # what each reject reason does next (forge/review/consequences.py): a pair's fault asks again the
        # stage that made the faulty field, for that pair alone (keyed by its statement id; the pool's
        # other pairs stay): the marked true statement (wrong_gold, other: the statement stage, its foil
        # follows) or the foil that leaves two defensible options (ambiguous: the foil stage); the open
        # question's answers are corrected one by one in the form (logic/corrections.py); a reason
        # about the question drops its pool only (the clip's other questions stay); a faulty clip leaves (§3.1)
        consequences={
            **{
                r: Consequence(Action.REGENERATE, "maia_statements", key="extra.statement_id")
                for r in ("wrong_gold", "other")
            },
            "ambiguous": Consequence(Action.REGENERATE, "maia_foils", key="extra.statement_id"),
            **{
                r: Consequence(Action.DROP_SOURCE, key="labels.question_id", names="question (its whole pool)")
                for r in ("no_implicit_meaning", "needs_outside_knowledge")
            },
            **{r: Consequence(Action.DROP_SOURCE) for r in ("bad_media", "offensive_or_private")},
        },
    ),
    eval=EvalSpec(
        kinds={"statement_verification": "mcq", "open_ended": "text"},
        primary_metric="agg_accuracy",
        extra_evals=(UNIMODAL,),  # §4.3 "Unimodal": the statements scored by text-only LMs (logic/unimodal.py)
        # the official repository's reading (compute_mc_scores.py: first standalone A/B) and judge
        # (compute_llm-as-a-judge.py: every reply judged as generated, against R1..R8)
        judge_prompt="maia_oe_judge.yaml",
        judge_unparseable=True,
        similarity=True,
        text_metrics=True,  # Table 4: BLEU / ROUGE-L / METEOR / CIDEr / BERTScore vs the pool of 8 references
        circular=True,
        # Tables 10 / 13: the causal column split into explicit and implicit
        report_slices=(
            ("sv_accuracy", "category"),
            ("oe_accuracy", "category"),
            ("sv_accuracy", "causal_type"),
            ("oe_accuracy", "causal_type"),
        ),
        # §6 / Table 4: every metric, the reference-overlap ones included
        report_tables={
            "all_metrics": (
                "sv_accuracy",
                "pool_consistency",
                "oe_accuracy",
                "rouge_l",
                "bleu",
                "meteor",
                "cider",
                "bertscore_f1",
                "embedding_similarity",
                "agg_accuracy",
            )
        },
        multi_label=(),  # category and causal type: one per question in the release
        # eval_model.py sends its frames through vllm_engine.py: the frames, then the text
        part_order={"*": PartOrder(ImagePlacement.BEFORE_TEXT, "MAIA vllm_engine.py VllmModel._build_conversation")},
    ),
    paper=PaperCard(
        "@article{testa2025maia,\n  title={All-in-one: Understanding and Generation in Multimodal Reasoning with "
        "the MAIA Benchmark},\n  author={Testa, Davide and Bonetta, Giovanni and Bernardi, Raffaella and "
        "Bondielli, Alessandro and Lenci, Alessandro and Miaschi, Alessio and Passaro, Lucia and Magnini, "
        "Bernardo},\n  journal={arXiv preprint arXiv:2502.16989},\n  year={2025}\n}",
        "Video reasoning in twelve categories through two aligned tasks on the same questions: visual statement "
        "verification (true statement vs a minimal-edit foil) and open-ended answering (MAIA §4).",
        "Questions, answer pools, statements and foils are LLM-generated and machine-checked (App. A). In the "
        "paper, 12 qualified annotators wrote the questions and 8 Italian-native participants answered each "
        "(§3.1, App. A.3); GPT-4o wrote the true statements and foils from those answers (§3.1, Statement "
        "Collection).",
    ),
)
