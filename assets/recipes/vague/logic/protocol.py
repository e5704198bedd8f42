"""VAGUE's human steps (§4.2.1, §4.2.2; docs/review.md "Protocol steps"); people rate and select on
their own, the LLM judge's ratings and selection hidden (``DraftMode.HIDDEN``, the paper's way):

* ``direct_rating``: raters score each direct expression 1-5 for relevance and solvability; only
  4 and 5 are kept (§4.2.1);
* ``indirect_selection``: annotators pick the best of the three indirect candidates (sarcasm,
  humour, meme/idiom) and rate it 1-5; only 3 and above are kept (§4.2.2).

Several raters combine by their mean (the paper names no rule). People decide, the LLM judge is
advisory: the stages keep the rows the judge rated low (``judge_keep`` false), people are asked
about every row, and the stages read the results through ``rated_direct`` and
``selected_indirect``: a direct expression people rated 4-5 is used even where the judge dropped
it, one people rated below the threshold gets no indirect expression even where the judge kept
it; the judge's verdict counts only where no person answered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from forge.benchmarks.protocol_spec import Display, FieldKind, HumanStep, StepField

from .logic import STRATEGIES

DIRECT = "direct_rating"
INDIRECT = "indirect_selection"
# The paper's thresholds (§4.2.1: keep 4 and 5; §4.2.2: keep 3 and above), config.yaml's defaults too.
DIRECT_MIN = {"relevance": 4, "solvability": 4}
INDIRECT_MIN = {"rating": 3}
_NAMES = {"sarcasm": "sarcasm", "humour": "humour", "meme_idiom": "meme / idiom"}


def _direct_data(row: Mapping[str, Any]) -> dict[str, Any]:
    triple = f"({row['subject']}, {row['action']}, {row['object']})"
    return {"image": row["image_path"], "direct": f"{row['direct_expression']}\nSolution: {triple}"}


def _direct_llm(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"relevance": int(row["relevance"]), "solvability": int(row["solvability"])}


def _candidates(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    cands = row["candidates"]
    return json.loads(cands) if isinstance(cands, str) else list(cands)


def _indirect_data(row: Mapping[str, Any]) -> dict[str, Any]:
    lines = []
    for i, c in enumerate(_candidates(row), 1):
        flag = "" if (c.get("ambiguity") or {}).get("ok", True) else "  [fails the ambiguity check]"
        lines.append(f"{i}. {_NAMES.get(c['strategy'], c['strategy'])}: {c['expression']}{flag}")
    return {
        "image": row["image_path"],
        "direct": str(row.get("direct_expression") or ""),
        "candidates": "\n".join(lines),
    }


def _indirect_llm(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"selected": row["strategy"], "rating": int(row["rating"])}


STEPS = (
    HumanStep(
        name=DIRECT,
        corrects="vague_direct",
        unit_key="frame_id",
        fields=(
            StepField("relevance", FieldKind.RATING, "Relevance (1-5): does the request fit the scene?", to="direct"),
            StepField(
                "solvability",
                FieldKind.RATING,
                "Solvability (1-5): can it be done with what is in the image?",
                to="direct",
            ),
        ),
        display=(Display("image", "image"), Display("direct", "text", "Direct expression")),
        thresholds=DIRECT_MIN,
        joins=(("vague_candidates", ("image_path",)),),
        note="§4.2.1: human raters score each direct expression 1-5 for relevance and solvability; 4 and 5 are kept.",
        read_by=("vague_indirect", "vague_options", "vague_items"),
    ),
    HumanStep(
        name=INDIRECT,
        corrects="vague_indirect",
        unit_key="frame_id",
        fields=(
            StepField(
                "selected",
                FieldKind.CHOICE,
                "Which candidate best conveys the intention indirectly?",
                tuple((s, f"{i}. {_NAMES[s]}") for i, s in enumerate(STRATEGIES, 1)),
                to="candidates",
            ),
            StepField("rating", FieldKind.RATING, "Rate the selected candidate (1-5)", to="candidates"),
        ),
        display=(
            Display("image", "image"),
            Display("direct", "text", "Direct expression (the intention)"),
            Display("candidates", "text", "Indirect candidates"),
        ),
        thresholds=INDIRECT_MIN,
        joins=(("vague_candidates", ("image_path",)), ("vague_direct", ("direct_expression",))),
        note="§4.2.2: annotators select the best of three indirect candidates and rate it 1-5; 3 and above are kept.",
        read_by=("vague_options", "vague_items"),
    ),
)
# What each step's form shows and the LLM's answer (the paper's hooks dispatch on the step's name: hooks.py)
TASK_DATA = {DIRECT: _direct_data, INDIRECT: _indirect_data}
LLM_VALUES = {DIRECT: _direct_llm, INDIRECT: _indirect_llm}


def rated_direct(direct: pd.DataFrame, decided: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The direct expressions the indirect stage builds on: people's ratings replace the judge's
    where people rated, and decide; one below the paper's thresholds is left out. Where no person
    rated, the judge's verdict (``judge_keep``) stands."""
    if direct.empty:
        return direct
    df = direct.copy()
    for i, f in zip(df.index, df["frame_id"]):
        d = decided.get(f)
        if d is not None and d["decided_by"] == "human":
            for k in DIRECT_MIN:  # the table keeps whole ratings: the raters' mean, rounded half up
                df.at[i, k] = int(float(d["values"][k]) + 0.5)
    return df[_keep(df, decided)]


def _keep(df: pd.DataFrame, decided: Mapping[str, Mapping[str, Any]]) -> list[bool]:
    """People's keep where they answered, the judge's (``judge_keep``; older files: kept) otherwise."""
    judge = df["judge_keep"] if "judge_keep" in df else pd.Series(True, index=df.index)
    out = []
    for f, j in zip(df["frame_id"], judge):
        d = decided.get(f)
        out.append(bool(d["keep"]) if d is not None and d["decided_by"] == "human" else bool(pd.isna(j) or j))
    return out


def selected_indirect(indirect: pd.DataFrame, decided: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The indirect expressions the options and items stages use: people's selected candidate and
    rating where people selected; a selection rated below 3 is not used (the row is left out), even
    where the judge kept it, and one people rated 3 or more is used even where the judge dropped it."""
    if indirect.empty:
        return indirect
    df = indirect.copy()
    for i, r in zip(df.index, df.to_dict("records")):
        d = decided.get(r["frame_id"])
        if d is None or d["decided_by"] != "human":
            continue
        chosen = next(c for c in _candidates(r) if c["strategy"] == d["values"]["selected"])
        df.at[i, "strategy"] = chosen["strategy"]
        df.at[i, "indirect_expression"] = chosen["expression"]
        df.at[i, "superficial_interpretation"] = chosen["superficial_interpretation"]
        df.at[i, "rating"] = int(float(d["values"]["rating"]) + 0.5)
        df.at[i, "ambiguity_report"] = json.dumps(chosen.get("ambiguity") or {})
    return df[_keep(df, decided)]
