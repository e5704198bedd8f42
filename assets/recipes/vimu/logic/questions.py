"""ViMU Stages 3–4: hint-free question generation and the validate-and-refine loop.

The loop itself is the engine's (``forge.llm.refine.refine``); this module supplies the ViMU
parts: the generation request (``generate_qa`` prompt), the code hint-leak check (a leak is a
``major`` verdict with feedback, so the judge is skipped and the pair regenerated), the judge
request (``validate_qa``) and the reviser (``refine_qa`` with the previous pair and the
feedback), plus turning a ``RefineRun`` into question rows and outcome statistics.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from forge.checks.language import language_first, wrong_language_outcome
from forge.llm.refine import RefineOutcome, RefineRun, Verdict
from forge.llm.types import LLMRequest

from .annotate import annotation_for_prompt
from .hints import find_hint_leaks, leak_feedback


def question_id(clip_id: str) -> str:
    return "vq_" + hashlib.sha1(f"vimu:oe:{clip_id}".encode()).hexdigest()[:12]


def generation_request(prompt: Any, annotation: dict[str, Any], terms: list[str]) -> LLMRequest:
    return LLMRequest(
        item_id=annotation["clip_id"],
        prompt=prompt,
        variables={"annotation": annotation_for_prompt(annotation), "forbidden_terms": ", ".join(terms)},
    )


def hint_check(terms: list[str]) -> Callable[[LLMRequest, dict[str, Any]], Verdict | None]:
    """The code-side hint-free check: any taxonomy / dimension term in the question → major."""

    def hint_leak(_req: LLMRequest, output: dict[str, Any]) -> Verdict | None:
        leaks = find_hint_leaks(str(output.get("question", "")), terms)
        if not leaks:
            return None
        return Verdict("major", leak_feedback(leaks), "hint_leak")

    return hint_leak


LANGUAGE = "en"  # ViMU's questions, answers and reference points are English (§3, App. A)
QA_TEXT = ("question", "answer", "reference_points")


def qa_checks(terms: list[str], lang: str = LANGUAGE) -> list[Callable[[LLMRequest, dict[str, Any]], Verdict | None]]:
    """The refine checks of a generated pair: its language first (``wrong_language``), then the
    hint-free check, which never reads text in another language."""
    return language_first(lang, QA_TEXT, [hint_check(terms)])


def add_rejects(run: RefineRun, log: Any) -> None:
    """Rejected pairs: ``wrong_language`` when the text stayed in another language, else the
    refine outcome's own ``refine_<reason>``."""
    wrong = [o for o in run.rejected() if wrong_language_outcome(o)]
    for o in wrong:
        log.add(o.item_id, "wrong_language", "RefineReject", o.detail or "")
    RefineRun(run.stage, run.partition, [o for o in run.outcomes if o not in wrong]).add_rejects(log)


def _points(output: dict[str, Any]) -> str:
    return "\n".join(f"- {p}" for p in output.get("reference_points") or []) or "(none)"


def judge_builder(prompt: Any) -> Callable[[LLMRequest, dict[str, Any]], LLMRequest]:
    def judge(req: LLMRequest, output: dict[str, Any]) -> LLMRequest:
        return LLMRequest(
            item_id=req.item_id,
            prompt=prompt,
            variables={
                "annotation": req.variables["annotation"],
                "question": str(output.get("question", "")),
                "answer": str(output.get("answer", "")),
                "reference_points": _points(output),
            },
        )

    return judge


def reviser(prompt: Any) -> Callable[[LLMRequest, dict[str, Any], Verdict], LLMRequest]:
    """Q^(k+1) = g(T, feedback^(k)): the refine prompt with the previous pair and the feedback."""

    def revise(req: LLMRequest, output: dict[str, Any], verdict: Verdict) -> LLMRequest:
        previous = json.dumps(
            {k: output.get(k) for k in ("question", "answer", "reference_points")}, ensure_ascii=False, indent=1
        )
        return replace(
            req,
            prompt=prompt,
            extra_messages=[],
            variables={
                "annotation": req.variables["annotation"],
                "forbidden_terms": req.variables["forbidden_terms"],
                "previous": previous,
                "feedback": verdict.feedback or "(no feedback given)",
            },
        )

    return revise


def verdict_from_validation(data: dict[str, Any]) -> Verdict:
    """Read the validator's reply. The verdict decides (as in the paper); the criterion flags are
    kept in the attempt's output for analysis. An unknown verdict raises (the loop rejects)."""
    label = str(data.get("verdict", "")).strip().lower()
    if label not in ("pass", "minor", "major", "reject"):
        raise ValueError(f"unknown verdict {label!r}")
    return Verdict(label, str(data.get("feedback") or ""), "judge")


def outcome_kind(o: RefineOutcome) -> str:
    """accepted_round_<k> (k = refinement rounds used, 0 = first pair accepted) | rejected | exhausted | failed."""
    if o.accepted:
        return f"accepted_round_{o.rounds}"
    if o.reason == "max_rounds":
        return "exhausted"
    if o.reason == "verdict_reject":
        return "rejected"
    return "failed"


def outcome_stats(runs: list[RefineRun], max_rounds: int) -> dict[str, Any]:
    keys = [f"accepted_round_{k}" for k in range(max_rounds + 1)] + ["rejected", "exhausted", "failed"]
    counts = dict.fromkeys(keys, 0)
    hint_leaks = 0
    for run in runs:
        for o in run.outcomes:
            counts[outcome_kind(o)] = counts.get(outcome_kind(o), 0) + 1
            hint_leaks += sum(1 for a in o.attempts if a["step"] == "check:hint_leak")
    total = sum(counts.values())
    rates = {f"{k}_rate": round(v / total, 4) if total else 0.0 for k, v in counts.items()}
    return {"items": total, **counts, **rates, "hint_leaks_caught": hint_leaks}


def question_row(o: RefineOutcome, annotation: dict[str, Any], judge_hash: str) -> dict[str, Any]:
    d, res = o.data or {}, o.result
    assert res is not None
    return {
        "question_id": question_id(annotation["clip_id"]),
        "clip_id": annotation["clip_id"],
        "batch": annotation["batch"],
        "question": str(d.get("question", "")).strip(),
        "answer": str(d.get("answer", "")).strip(),
        "reference_points": [str(p) for p in d.get("reference_points") or []],
        "rounds": int(o.rounds),
        "final_verdict": o.verdict.label if o.verdict else None,
        "feedback": (o.verdict.feedback or None) if o.verdict else None,
        "judge_prompt_hash": judge_hash,
        "prompt_name": res.prompt_name,
        "prompt_hash": res.prompt_hash,
        "model": res.model,
        "backend": res.backend,
    }
