"""MAIA's human step (§3.1, App. A.3 "Answers Collection"; docs/review.md "Protocol steps"): eight
native speakers answer each question watching the clip, screened by the control questions: an
annotator counts only after answering at least ``min_answered`` of them (the paper's form held 20:
10 videos × 2) with at least 90 % acceptable; otherwise their answers are excluded, with the reason
(the paper rejected the submission and reassigned it).

The control questions are the paper's: the *Out-of-scope* question, whose acceptable answer is a
negation, and the *Uncertainty* question, whose acceptable answer expresses uncertainty. They sit
in everyone's queue at the paper's rate (2 of a clip's 12 questions). Acceptability is judged as
the paper did, by an LLM few-shot prompt (``prompts/control_judge.yaml``, ``judge``); on the offline
stub backend, with no engine, or where the judge's reply fails, by a word rule (``acceptable``).
People answer blind: no persona's answer is shown (it would anchor them).

``maia_answer_pools`` reads ``people_answers`` under ``answers.source``: ``personas`` (the LLM
personas, as before), ``people`` (the pool is the people's answers), ``mixed`` (the people's answers
first, LLM personas filling the slots they left: a question two people answered gets six personas).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from forge.benchmarks.protocol_spec import Control, Display, FieldKind, HumanStep, StepField
from forge.benchmarks.settings import recipe_settings
from forge.llm.prompts import load_prompt
from forge.llm.stub import advisory
from forge.llm.types import LLMRequest

from .language import LanguagePrompts, recipe_language

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


JUDGE_STAGE = "maia_answers_results"  # the engine's stage of the control judge (llm_calls, overrides)
PROMPTS = LanguagePrompts(
    Path(__file__).resolve().parent.parent / "prompts",
    ("control_judge",),
    lambda: recipe_language(recipe_settings("maia")),
)


def judge(engine: Any, pairs: list[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> list[tuple[bool, str]]:
    """App. A.3: each control answer judged acceptable or not by the few-shot LLM judge; the word
    rule (``acceptable``) where the judge cannot say: no engine, the offline stub (its verdicts are
    placeholders, forge.llm.stub.advisory), or a failed reply (``rule (judge failed: …)``)."""
    if engine is None or advisory(engine):
        why = "rule" if engine is None else "rule (stub backend)"
        return [(acceptable(k, v), why) for k, v in pairs]
    prompt = load_prompt(PROMPTS["control_judge"])
    reqs = [
        LLMRequest(
            item_id=f"control{i}",
            prompt=prompt,
            variables={"category": k["category"], "question": k["question"], "answer": str(v.get("answer") or "")},
        )
        for i, (k, v) in enumerate(pairs)
    ]
    out = []
    for (k, v), r in zip(pairs, engine.run(JUDGE_STAGE, "controls", reqs), strict=True):
        if r.ok and isinstance(r.data, dict) and isinstance(r.data.get("acceptable"), bool):
            out.append((bool(r.data["acceptable"]), f"llm:{r.model}"))
        else:
            out.append((acceptable(k, v), f"rule (judge failed: {r.error_class or 'unreadable reply'})"))
    return out


def _data(row: Mapping[str, Any]) -> dict[str, Any]:
    video = row.get("video")
    return {
        "video": str(video) if isinstance(video, str) and video else "",
        "frames": [str(p) for p in row["media_paths"]],
        "question": str(row["question"]),
    }


def _with_clip(df: pd.DataFrame, read: Any) -> pd.DataFrame:
    """The questions with their clip's file (``clips.path``) as ``video``: the person watches the clip."""
    clips = read("clips")
    paths = clips[["clip_id", "path"]].drop_duplicates("clip_id") if "path" in clips else pd.DataFrame()
    if paths.empty:
        return df.assign(video=None)
    return df.merge(paths.rename(columns={"path": "video"}), on="clip_id", how="left")


def _controls(row: Mapping[str, Any]) -> dict[str, Any] | None:
    if row["category"] not in CONTROLS:
        return None
    return {"category": row["category"], "question": str(row["question"])}


STEP = HumanStep(
    name=ANSWERS,
    corrects="maia_questions",
    unit_key="question_id",
    fields=(
        StepField(
            "answer", FieldKind.TEXT, "Your answer (a complete sentence, from what the clip shows)", to="question"
        ),
    ),
    display=(
        Display("video", "video", "The clip (watch it as often as you like; ignore its audio)"),
        Display("frames", "images", "Frames of the clip"),
        Display("question", "text", "Question"),
    ),
    # blind: no LLM answer is shown or falls back (the hooks' shared ``step_llm_values``: none)
    annotators=8,  # §3.1: eight annotators per question
    # App. A.3: 2 control questions of a clip's 12 (rate), 20 per form (10 clips), 90 % right
    # judged by the few-shot LLM judge (``judge``), the word rule (``acceptable``) where it cannot say
    control=Control("answer", threshold=0.9, min_answered=20, rate=2 / 12, judged=True),
    note="§3.1 / App. A.3: eight native speakers answer each question watching the clip; an annotator counts "
    "after answering the control questions (out-of-scope: a negation; uncertainty: uncertain) at 90 % or more.",
    read_by=("maia_answer_pools", "maia_statements", "maia_foils", "maia_items"),
)
STEPS = (STEP,)
# The step's form, its rows, its control units and their judge (the paper's hooks dispatch on the
# step's name: hooks.py)
TASK_DATA = {ANSWERS: _data}
PREPARE = {ANSWERS: _with_clip}
CONTROL_UNITS = {ANSWERS: _controls}
CONTROL_CHECK = {ANSWERS: acceptable}
CONTROL_JUDGE = {ANSWERS: judge}


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
