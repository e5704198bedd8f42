"""ViMU asset checks (standalone, they read the published tables).

* ``prompt_current_*``: rows made with a prompt file that has since changed (engine helper for
  annotations and questions; items carry one hash over all four prompts).
* ``hint_free_questions``: the accepted questions re-checked against the current taxonomy's
  terms; also reports how many leaks the loop caught (llm_attempts) and the rate.
* ``items_consistent``: gold letters vs option types, four tasks per clip, labels json readable.
"""

from __future__ import annotations

import json

import dagster as dg
import pandas as pd

from assets.llm_support import outdated_prompt_check
from resources.storage import StorageResource

from .assets import (
    ALL_PROMPTS,
    ANNOTATE_PROMPT,
    GENERATE_PROMPT,
    REFINE_PROMPT,
    items_prompt_hash,
    settings,
)
from .logic.hints import find_hint_leaks
from .logic.items import parse_letters
from .logic.taxonomy import load_taxonomy

annotations_prompt_current = outdated_prompt_check("vimu_annotations", "vimu_annotations", [ANNOTATE_PROMPT])
questions_prompt_current = outdated_prompt_check("vimu_questions", "vimu_questions", [GENERATE_PROMPT, REFINE_PROMPT])


@dg.asset_check(
    asset="vimu_items",
    name="prompt_current_vimu_items",
    blocking=False,
    description="Items whose prompt_hash (one hash over the four ViMU prompt files) is not the current one.",
)
def items_prompt_current(storage: StorageResource) -> dg.AssetCheckResult:
    store = storage.store
    df = (
        store.read("vimu_items", columns=["prompt_hash"])
        if store.exists("vimu_items")
        else pd.DataFrame(columns=["prompt_hash"])
    )
    current = items_prompt_hash()
    n = int((df["prompt_hash"] != current).sum()) if len(df) else 0
    return dg.AssetCheckResult(
        passed=n == 0,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "rows": len(df),
            "outdated_rows": n,
            "current_hash": current,
            "prompt_files": ", ".join(p.name for p in ALL_PROMPTS),
        },
    )


@dg.asset_check(
    asset="vimu_questions",
    name="hint_free_questions",
    blocking=True,
    description="No accepted question names a tested dimension or taxonomy term (current taxonomy); "
    "reports the leaks the refine loop caught and regenerated.",
)
def hint_free_questions(storage: StorageResource) -> dg.AssetCheckResult:
    store = storage.store
    terms = load_taxonomy().hint_terms(
        tuple(settings().get("questions", {}).get("hint_axes", ["dimension", "rhetoric", "social_value", "evidence"]))
    )
    q = (
        store.read("vimu_questions")
        if store.exists("vimu_questions")
        else pd.DataFrame(columns=["question_id", "question"])
    )
    leaks = {r["question_id"]: [x.matched for x in find_hint_leaks(r["question"], terms)] for r in q.to_dict("records")}
    leaks = {k: v for k, v in leaks.items() if v}
    att = (
        store.read("llm_attempts", where="stage = 'vimu_questions'") if store.exists("llm_attempts") else pd.DataFrame()
    )
    caught = int((att["step"] == "check:hint_leak").sum()) if len(att) else 0
    generations = int((att["step"] == "generate").sum()) if len(att) else 0
    return dg.AssetCheckResult(
        passed=not leaks,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "questions": len(q),
            "leaking_questions": len(leaks),
            "leak_rate": dg.MetadataValue.float(len(leaks) / len(q) if len(q) else 0.0),
            "leaks_caught_in_loop": caught,
            "generations": generations,
            "caught_rate_per_generation": dg.MetadataValue.float(caught / generations if generations else 0.0),
            "examples": dg.MetadataValue.json(dict(list(leaks.items())[:10])),
        },
    )


def item_problems(df: pd.DataFrame) -> list[str]:
    """Inconsistencies in a vimu_items frame (empty when consistent)."""
    problems: list[str] = []
    for r in df.to_dict("records"):
        iid = r["item_id"]
        try:
            json.loads(r["labels"])
            json.loads(r["extra"])
        except (TypeError, ValueError):
            problems.append(f"{iid}: labels/extra not JSON")
        if r["task"] == "multi_select":
            opts = [] if r["options"] is None else list(r["options"])
            types = [] if r["option_types"] is None else list(r["option_types"])
            gold = parse_letters(r["answer"])
            want = [chr(65 + i) for i, t in enumerate(types) if t == "correct"]
            if len(opts) != 5 or len(types) != 5:
                problems.append(f"{iid}: expected 5 options")
            elif not gold or gold != want:
                problems.append(f"{iid}: answer {r['answer']} disagrees with option_types")
    if len(df):
        per_clip = df.groupby("unit_id")["category"].apply(set)
        for clip, cats in per_clip.items():
            if "OE" not in cats:
                problems.append(f"{clip}: no OE item")
    return problems


@dg.asset_check(
    asset="vimu_items",
    name="items_consistent",
    blocking=True,
    description="Multi-select gold letters match option types; 5 options; every clip has its OE item.",
)
def items_consistent(storage: StorageResource) -> dg.AssetCheckResult:
    store = storage.store
    df = store.read("vimu_items") if store.exists("vimu_items") else pd.DataFrame()
    problems = item_problems(df) if len(df) else []
    by_cat = df["category"].value_counts().to_dict() if len(df) else {}
    clips = int(df["unit_id"].nunique()) if len(df) else 0
    return dg.AssetCheckResult(
        passed=not problems,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "items": len(df),
            "clips": clips,
            "by_category": dg.MetadataValue.json(by_cat),
            "complete_clip_rate": dg.MetadataValue.float(
                float((df.groupby("unit_id")["category"].nunique() == 4).mean()) if clips else 0.0
            ),
            "problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems[:50]) or "none"),
        },
    )


CHECKS = [
    annotations_prompt_current,
    questions_prompt_current,
    items_prompt_current,
    hint_free_questions,
    items_consistent,
]
