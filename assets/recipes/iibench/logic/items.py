"""II-Bench questions (§3.2 "Data Annotation", App. B.2): 1-3 single-answer questions per
image, each with one correct option and five distractors about the implication's nuances.

A question passes when the code checks find six distinct, non-empty options and the
distractor judge finds every distractor plausible, none of them also correct, and the
intended answer supported by the image's implication. Failing questions are regenerated
with the reasons as feedback (up to K rounds) and otherwise rejected.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from forge.checks.mcq import duplicate_options, shuffle_options

N_DISTRACTORS = 5
MAX_QUESTIONS = 3  # App. B.2: 1-3 questions per image


def questions_wanted(n: int | None) -> str:
    """How many questions the prompt asks for. ``None`` (the paper, §3.2 / App. B.2): "1 to 3",
    the count left to the writer as the paper's annotators chose it (1,434 questions for 1,222
    images); an int asks for exactly that many, clamped to 1-3."""
    return f"1 to {MAX_QUESTIONS}" if n is None else str(max(1, min(MAX_QUESTIONS, int(n))))


# Reject reasons (stable codes, also used in check metadata).
DUPLICATE_OPTIONS = "duplicate_options"
BAD_OPTIONS = "bad_options"
ALSO_CORRECT = "distractor_also_correct"
IMPLAUSIBLE = "distractor_implausible"
ANSWER_UNSUPPORTED = "answer_not_supported"


@dataclass
class Question:
    question: str
    correct: str
    distractors: list[str]
    nuance: str = ""
    round: int = 1
    problems: list[str] = field(default_factory=list)  # reason codes
    feedback: list[str] = field(default_factory=list)  # human-readable, sent back on regeneration

    @property
    def options(self) -> list[str]:
        return [self.correct, *self.distractors]


def parse_questions(data: dict[str, Any], round_no: int = 1) -> list[Question]:
    out = []
    for q in data.get("questions") or []:
        out.append(
            Question(
                question=str(q.get("question") or "").strip(),
                correct=str(q.get("correct_answer") or "").strip(),
                distractors=[str(d).strip() for d in (q.get("distractors") or [])],
                nuance=str(q.get("nuance") or "").strip(),
                round=round_no,
            )
        )
    return out


def code_check(q: Question, dup_threshold: float = 0.9) -> Question:
    """Structural checks that need no model: counts, empties, duplicate options."""
    if not q.question:
        q.problems.append(BAD_OPTIONS)
        q.feedback.append("the question is empty")
    if len(q.distractors) != N_DISTRACTORS:
        q.problems.append(BAD_OPTIONS)
        q.feedback.append(f"expected {N_DISTRACTORS} distractors, got {len(q.distractors)}")
    if any(not o for o in q.options):
        q.problems.append(BAD_OPTIONS)
        q.feedback.append("an option is empty")
    dups = duplicate_options(q.options, threshold=dup_threshold)
    if dups:
        q.problems.append(DUPLICATE_OPTIONS)
        pairs = ", ".join(f"{_name(d.i)} ≈ {_name(d.j)}" for d in dups)
        q.feedback.append(f"options repeat each other ({pairs}); every option must say something different")
    return q


def _name(i: int) -> str:
    return "the correct answer" if i == 0 else f"distractor {i}"


def judge_variables(q: Question, explanation: str) -> dict[str, Any]:
    return {
        "explanation": explanation,
        "question": q.question,
        "correct_answer": q.correct,
        "distractors": "\n".join(f"{i}. {d}" for i, d in enumerate(q.distractors, 1)),
    }


def apply_judge(q: Question, data: dict[str, Any]) -> Question:
    """Turn the distractor judge's reply into reason codes and feedback on ``q``."""
    if not data.get("answer_supported", False):
        q.problems.append(ANSWER_UNSUPPORTED)
        q.feedback.append(
            f"the intended answer is not supported by the implication: {data.get('answer_reason', '')}".strip()
        )
    by_index = {
        int(v.get("distractor", 0)): v for v in data.get("distractors") or [] if str(v.get("distractor", "")).isdigit()
    }
    for i in range(1, len(q.distractors) + 1):
        v = by_index.get(i)
        if v is None:
            q.problems.append(IMPLAUSIBLE)
            q.feedback.append(f"distractor {i} was not judged")
            continue
        if v.get("also_correct"):
            q.problems.append(ALSO_CORRECT)
            q.feedback.append(f"distractor {i} is also a correct answer: {v.get('reason', '')}".strip())
        elif not v.get("plausible", False):
            q.problems.append(IMPLAUSIBLE)
            q.feedback.append(f"distractor {i} is not plausible: {v.get('reason', '')}".strip())
    return q


def primary_reason(q: Question) -> str:
    """The reject reason for a failed question (most serious first)."""
    for code in (BAD_OPTIONS, DUPLICATE_OPTIONS, ANSWER_UNSUPPORTED, ALSO_CORRECT, IMPLAUSIBLE):
        if code in q.problems:
            return code
    return q.problems[0] if q.problems else "unknown"


def feedback_text(failed: list[Question]) -> str:
    """The user turn sent with a regeneration round: what was wrong with each question."""
    lines = [
        f"{len(failed)} of your questions failed review. Write {len(failed)} new question(s) "
        "for this image that avoid these problems (do not repeat the failed wording):"
    ]
    for k, q in enumerate(failed, 1):
        lines.append(f'{k}. "{q.question}" — ' + "; ".join(q.feedback))
    return "\n".join(lines)


def item_id(frame_id: str, question: str) -> str:
    return "iib_" + hashlib.sha1(f"{frame_id}\0{question}".encode()).hexdigest()[:12]


def build_item(q: Question, image: dict[str, Any], labels: dict[str, Any], seed: int) -> dict[str, Any]:
    """One benchmark row with the common item columns (docs/conventions.md) and seeded option order."""
    iid = item_id(image["frame_id"], q.question)
    mcq = shuffle_options(q.options, ["correct"] + ["distractor"] * len(q.distractors), seed=(seed, iid))
    return {
        "item_id": iid,
        "benchmark": "iibench",
        "task": "mcq",
        "category": labels["domain"],
        "question": q.question,
        "options": mcq.options,
        "option_types": mcq.option_types,
        "answer": mcq.answer,
        "references": None,
        "media_paths": [image["path"]],
        "unit_id": image["frame_id"],
        "source_item_id": image["item_id"],
        "source": image["source"],
        "channel": image.get("channel"),
        "batch": image["batch"],
        "labels": json.dumps({k: labels[k] for k in ("image_type", "domain", "emotion", "rhetoric", "difficulty")}),
        "extra": json.dumps({"explanation": labels.get("explanation", ""), "nuance": q.nuance, "round": q.round}),
    }


# -- a whole image's question set (the unit of the refine loop) -----------------------
def questions_text(questions: list[Question]) -> str:
    """How the judge sees the set: each question, its intended answer, numbered distractors."""
    blocks = []
    for k, q in enumerate(questions, 1):
        ds = "\n".join(f"    {i}. {d}" for i, d in enumerate(q.distractors, 1))
        blocks.append(f"Question {k}: {q.question}\n  Intended answer: {q.correct}\n  Distractors:\n{ds}")
    return "\n\n".join(blocks)


def apply_set_judge(questions: list[Question], data: dict[str, Any]) -> list[Question]:
    """Apply the judge's per-question verdicts (by 1-based index); an unjudged question fails."""
    by_index = {int(v.get("index", 0)): v for v in data.get("questions") or []}
    for k, q in enumerate(questions, 1):
        v = by_index.get(k)
        if v is None:
            q.problems.append(IMPLAUSIBLE)
            q.feedback.append("the reviewer did not judge this question")
        else:
            apply_judge(q, v)
    return questions


def set_feedback(questions: list[Question]) -> str:
    """Refine feedback for a set: what is wrong with which question; passing ones stay."""
    failed = [(k, q) for k, q in enumerate(questions, 1) if q.problems]
    keep = [k for k, q in enumerate(questions, 1) if not q.problems]
    lines = [f'Question {k} ("{q.question}"): ' + "; ".join(q.feedback) for k, q in failed]
    if keep:
        lines.append("Keep question(s) " + ", ".join(map(str, keep)) + " exactly as they are; rewrite only the others.")
    return "\n".join(lines)


def resolve_set(
    attempts: list[dict[str, Any]], dup_threshold: float = 0.9, advisory: bool = False
) -> tuple[list[Question], list[Question]]:
    """(accepted, failed) questions of an image from its refine attempts' last round.

    The refine loop judges a whole set; when K rounds run out with some questions still
    failing, the questions that passed both the code checks and the judge in the last round
    are kept, and each failing one is rejected with its own reason.

    ``advisory`` (stub output, ``forge.llm.stub.advisory``): every question is accepted; the
    problems the checks and the judge found stay on it (``problems``/``feedback``) as a record.
    """
    gens = [a for a in attempts if a["step"] == "generate" and a.get("output")]
    if not gens:
        return [], []
    last = gens[-1]
    qs = [code_check(q, dup_threshold) for q in parse_questions(json.loads(last["output"]), last["round"] + 1)]
    judged = [a for a in attempts if a["step"] == "judge" and a["round"] == last["round"] and a.get("output")]
    if judged:
        apply_set_judge(qs, json.loads(judged[-1]["output"]))
    else:
        for q in qs:
            if not q.problems:
                q.problems.append("set_failed_code_check")
                q.feedback.append("not judged: another question of the set failed the code checks")
    if advisory:
        return qs, []
    return [q for q in qs if not q.problems], [q for q in qs if q.problems]
