"""MAIA's human step (§3.1, App. A.3; docs/review.md "Protocol steps"): eight native speakers answer
each question from the clip, screened by the control questions: an annotator who answers fewer
than 90 % of them acceptably is excluded (the paper rejected the submission and reassigned it).

The control questions are the paper's: the *Out-of-scope* question, whose acceptable answer is a
negation, and the *Uncertainty* question, whose acceptable answer expresses uncertainty. The paper
judged acceptability with GPT-4o few-shot; here a word rule does (``acceptable``), so a read needs
no model. People answer blind: no persona's answer is shown (it would anchor them).

``maia_answer_pools`` reads ``people_answers`` under ``answers.source``: ``personas`` (the LLM
personas, as before), ``people`` (the pool is the people's answers), ``mixed`` (the people's answers
first, LLM personas filling the slots they left: a question two people answered gets six personas).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from forge.benchmarks.protocol_spec import Control, Display, FieldKind, HumanStep, StepField

ANSWERS = "answers"
SOURCES = ("personas", "people", "mixed")
CONTROLS = ("out_of_scope", "uncertainty")  # App. A.3: the two questions with predefined acceptable answers
_NEGATION = r"\b(no|not|none|nobody|nothing|never|isn't|aren't|there is no|non|nessun[oa]?|niente|nulla|mai)\b|n't\b"
_UNCERTAIN = (
    r"\b(maybe|perhaps|probably|possibly|might|may|unclear|uncertain|not sure|hard to (say|tell)|can(no|')t (be )?"
    r"(determined|tell|say|know)|impossible to (say|tell|know|determine)|forse|probabilmente|non (si )?(può|puo|so)|"
    r"difficile (dire|da dire|stabilire)|impossibile (dire|stabilire|sapere)|non è chiaro|incert[oa])\b"
)


def acceptable(known: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    """A control answer is acceptable: a negation for out-of-scope, uncertainty for uncertainty."""
    text = str(values.get("answer") or "").lower()
    pattern = _NEGATION if known.get("category") == "out_of_scope" else _UNCERTAIN
    return re.search(pattern, text) is not None


def _data(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"frames": [str(p) for p in row["media_paths"]], "question": str(row["question"])}


def _controls(row: Mapping[str, Any]) -> dict[str, Any] | None:
    return {"category": row["category"]} if row["category"] in CONTROLS else None


STEP = HumanStep(
    name=ANSWERS,
    corrects="maia_questions",
    unit_key="question_id",
    fields=(
        StepField(
            "answer", FieldKind.TEXT, "Your answer (a complete sentence, from what the clip shows)", to="question"
        ),
    ),
    display=(Display("frames", "images", "The clip's frames"), Display("question", "text", "Question")),
    task_data=_data,
    llm_values=lambda _row: {},  # blind: people write their own answer
    annotators=8,  # §3.1: eight annotators per question
    control=Control("answer", threshold=0.9, check=acceptable),
    controls=_controls,
    note="§3.1 / App. A.3: eight native speakers answer each question; annotators below 90 % on the control "
    "questions (out-of-scope: a negation; uncertainty: uncertain) are excluded.",
    read_by=("maia_answer_pools", "maia_statements", "maia_foils", "maia_items"),
)
STEPS = (STEP,)


def people_answers(answers: pd.DataFrame) -> dict[str, list[str]]:
    """question id → the answers of people who were not excluded, earliest first (``protocol_answers``
    rows of the step; refused answers never count)."""
    if answers.empty:
        return {}
    ok = answers[answers["refused"].isna() & answers["excluded"].isna()].sort_values("created_at", kind="stable")
    out: dict[str, list[str]] = {}
    for r in ok.to_dict("records"):
        out.setdefault(str(r["unit_id"]), []).append(str(json.loads(r["values"])["answer"]))
    return out


def pool_source(source: str, people: list[str], size: int) -> list[str] | None:
    """The people's answers a pool is built from (the first slots of the pool), or None for the
    personas' pool. Under ``mixed`` the personas fill the slots the people left (the pool's
    ``origin`` says which member came from whom)."""
    if source not in SOURCES:
        raise ValueError(f"answers.source must be one of {SOURCES}, got {source!r}")
    if source == "people" or (source == "mixed" and people):
        return people[:size]
    return None
