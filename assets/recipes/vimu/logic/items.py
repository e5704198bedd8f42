"""ViMU Stage 5: task construction.

Per clip with an accepted hint-free question: one open-ended item (OE: the question, the
reference answer, the reference points for the judge of App. B) and three multi-select items
over the five macro options (EG: evidence sources, RM: rhetoric mechanisms, SV: social value
signals), gold = the annotated macro set written as letters ("A,C"). Options keep the fixed
A–E order of the taxonomy (the paper analyses option-letter affinity, so letters must mean the
same category in every item). Each item carries its App. G prompt variants in ``extra``.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from forge.items.cells import as_list
from forge.llm.prompts import render_template
from forge.storage.yaml_files import read_yaml

from .annotate import GOLD_FIELDS, as_first
from .taxonomy import LETTERS, Taxonomy

TASK_PROMPTS_PATH = Path(__file__).with_name("task_prompts.yaml")
MCQ_TASKS = {"EG": "evidence", "RM": "rhetoric", "SV": "social_value"}
TASK_KIND = {"OE": "open_ended", "EG": "multi_select", "RM": "multi_select", "SV": "multi_select"}


@lru_cache(maxsize=2)
def load_task_prompts(path: str | Path = TASK_PROMPTS_PATH) -> dict[str, Any]:
    doc = read_yaml(path)
    for task in TASK_KIND:
        if not doc["tasks"].get(task, {}).get("unguided"):
            raise ValueError(f"{path}: task {task} needs an unguided prompt")
    return doc


def item_id(clip_id: str, task: str) -> str:
    return f"vimu_{task.lower()}_" + hashlib.sha1(f"vimu:{task}:{clip_id}".encode()).hexdigest()[:12]


def gold_tasks(clip_id: str, rejected: dict[str, int] | None) -> dict[str, int]:
    """Choice task -> its regeneration attempt: the rejected revisions of the clip's RM / SV / EG
    item whose reason sends it back to Stage 2 (``forge/review/regenerate.py regenerations``)."""
    rejected = rejected or {}
    return {t: int(rejected[item_id(clip_id, t)]) for t in GOLD_FIELDS if rejected.get(item_id(clip_id, t))}


def answer_letters(letters: list[str]) -> str:
    bad = [x for x in letters if x not in LETTERS]
    if bad or not letters:
        raise ValueError(f"gold set must be non-empty letters of {LETTERS}, got {letters}")
    return ",".join(sorted(set(letters)))


def parse_letters(answer: str) -> list[str]:
    return sorted({x.strip().upper() for x in str(answer).split(",") if x.strip()})


def multi_select_score(predicted: list[str], gold: list[str]) -> float:
    """App. I: 0 if any predicted option is wrong, else |P ∩ G| / |G|."""
    p, g = set(predicted), set(gold)
    if not g:
        raise ValueError("empty gold set")
    if p - g:
        return 0.0
    return len(p & g) / len(g)


def render_variants(task: str, variables: dict[str, Any], prompts: dict[str, Any]) -> dict[str, str | None]:
    spec = prompts["tasks"][task]
    rules = prompts["output_rules"][TASK_KIND[task]].strip()
    out: dict[str, str | None] = {}
    for variant in ("unguided", "guided"):
        tpl = spec.get(variant)
        out[variant] = (
            render_template(tpl, {**variables, "rules": rules}, f"vimu.{task}.{variant}").strip() if tpl else None
        )
    return out


def build_items(
    tax: Taxonomy,
    annotation: dict[str, Any],
    question: dict[str, Any],
    *,
    prompt_hash: str,
    prompts: dict[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
    """The four items of one clip, and ``(item_id, reason, detail)`` for tasks that cannot be built.

    A multi-select task whose gold set is empty (e.g. the only rhetoric label is Other, which
    has no macro) is skipped with reason ``<task>_no_macro``.
    """
    prompts = prompts or load_task_prompts()
    cid = annotation["clip_id"]
    transcript = (annotation.get("transcript") or "").strip() or "(no speech)"
    macro_sets = {
        "rhetoric": list(annotation["rhetoric_macros"]),
        "social_value": list(annotation["social_value_macros"]),
        "evidence": list(annotation["evidence_macros"]),
    }
    labels = _labels(tax, annotation)
    # the OE item is made from the annotation its question was asked from (a regenerated RM / SV /
    # EG gold leaves it, and its review, as it was: logic/annotate.py ``regold``)
    first = as_first(annotation)
    common = {
        "benchmark": "vimu",
        "media_paths": list(annotation["media_paths"]),
        "unit_id": cid,
        "source_item_id": annotation["item_id"],
        "source": annotation["source"],
        "channel": annotation.get("channel"),
        "batch": annotation["batch"],
        "labels": json.dumps(labels, ensure_ascii=False),
        "backend": "stub" if "stub" in (question["backend"], annotation["backend"]) else question["backend"],
        "model": question["model"],
        "prompt_hash": prompt_hash,
        "question_id": question["question_id"],
    }
    items: list[dict[str, Any]] = []
    skipped: list[tuple[str, str, str]] = []
    oe_variants = render_variants("OE", {"question": question["question"], "transcript": transcript}, prompts)
    items.append(
        {
            "item_id": item_id(cid, "OE"),
            "task": TASK_KIND["OE"],
            "category": "OE",
            "question": question["question"],
            "options": None,
            "option_types": None,
            "answer": question["answer"],
            "references": [question["answer"]],
            **common,
            "labels": json.dumps(_labels(tax, first), ensure_ascii=False),
            "extra": json.dumps(
                {
                    "reference_points": list(question["reference_points"]),
                    "transcript": transcript,
                    "intended_meaning": first["intended_meaning"],
                    # what the official OE judge reads besides the gold (scripts/01-vimu_oe_judge.py)
                    "literal_summary": first.get("literal_content"),
                    "evidence": _plain_evidence(first.get("evidence")),
                    "prompts": oe_variants,
                },
                ensure_ascii=False,
            ),
        }
    )
    for task, axis in MCQ_TASKS.items():
        gold = macro_sets[axis]
        iid = item_id(cid, task)
        if not gold:
            skipped.append(
                (iid, f"{task.lower()}_no_macro", f"{axis} labels {labels[_fine_key(axis)]} map to no macro category")
            )
            continue
        ax = tax.axis(axis)
        options = [m.name for m in ax.macros]
        opt_text = "\n".join(f"{m.letter}. {m.name}" for m in ax.macros)
        variants = render_variants(
            task,
            {"question": ax.question, "transcript": transcript, "options": opt_text, "guidance": tax.guidance(axis)},
            prompts,
        )
        items.append(
            {
                "item_id": iid,
                "task": TASK_KIND[task],
                "category": task,
                "question": ax.question,
                "options": options,
                "option_types": ["correct" if m.letter in gold else "distractor" for m in ax.macros],
                "answer": answer_letters(gold),
                "references": None,
                **common,
                # its own task's labels as last written, the others' as first (a regenerated RM gold
                # leaves the SV and EG items, and their reviews, as they were)
                "labels": json.dumps(_labels(tax, {**first, **_gold(annotation, task)}), ensure_ascii=False),
                "extra": json.dumps(
                    {
                        "gold_names": tax.macro_names(axis, gold),
                        "fine_labels": labels[_fine_key(axis)],
                        "transcript": transcript,
                        "prompts": variants,
                    },
                    ensure_ascii=False,
                ),
            }
        )
    return items, skipped


def _gold(annotation: dict[str, Any], task: str) -> dict[str, Any]:
    return {f: annotation[f] for f in GOLD_FIELDS[task] if f in annotation}


def _labels(tax: Taxonomy, annotation: dict[str, Any]) -> dict[str, Any]:
    return {
        "rhetoric_macros": list(annotation["rhetoric_macros"]),
        "social_value_macros": list(annotation["social_value_macros"]),
        "evidence_macros": list(annotation["evidence_macros"]),
        "rhetoric_mechanisms": list(annotation["rhetoric_mechanisms"]),
        "social_value_signals": list(annotation["social_value_signals"]),
        "evidence_sources": list(annotation["evidence_sources"]),
        "target_kinds": as_list(annotation.get("target_kinds")),
        "taxonomy_version": tax.version,
    }


def _plain_evidence(raw: Any) -> list[dict[str, Any]]:
    """The annotation's ``[{source, cue}]`` evidence as plain JSON (it may come back as a string)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return [{"cue": raw}]
    return [dict(e) for e in raw] if isinstance(raw, list | tuple) else []


def _fine_key(axis: str) -> str:
    return {"rhetoric": "rhetoric_mechanisms", "social_value": "social_value_signals", "evidence": "evidence_sources"}[
        axis
    ]
