"""Foils (App. A.7–A.8): one minimal, category-specific edit per true statement, then the
structural check (LLM judge: is F a valid foil of C for the category?) and the NLI
contradiction test. Entailment, an identical foil, a non-minimal edit or an invalid
structure send the foil back for regeneration through ``forge.llm.refine``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from forge.checks.nli import NLIBackend
from forge.checks.text import canonical, token_edit_distance, tokens
from forge.llm.refine import Verdict
from forge.llm.types import LLMRequest
from forge.recipes.maia.taxonomy import category


def foil_prompt_file(prompts_dir: Path, category: str) -> Path:
    return prompts_dir / f"foil_{category}.yaml"


def edit_size(statement: str, foil: str, lang: str = "en") -> tuple[int, float]:
    """Token edit distance and its ratio to the statement's length (``lang``'s tokenisation:
    in Italian ``dell'auto`` → ``dell'`` + ``auto``, so swapping the noun is one edit)."""
    d = token_edit_distance(statement, foil, lang)
    return d, d / max(len(tokens(statement, lang)), 1)


def minimal_edit_check(
    max_edit_ratio: float, lang: str = "en"
) -> Callable[[LLMRequest, dict[str, Any]], Verdict | None]:
    def minimal_edit(req: LLMRequest, data: dict[str, Any]) -> Verdict | None:
        caption, foil = req.variables["caption"], str(data.get("foil", ""))
        if not foil.strip():
            return Verdict("major", "The foil is empty.")
        if canonical(foil) == canonical(caption):
            return Verdict("major", "The foil is identical to the caption: change the category-specific block.")
        _, ratio = edit_size(caption, foil, lang)
        if ratio > max_edit_ratio:
            return Verdict(
                "major",
                f"The edit is not minimal ({ratio:.0%} of the words changed): keep the sentence "
                "structure and change only the category-specific block.",
            )
        return None

    return minimal_edit


def nli_check(nli: NLIBackend, labels: dict[str, str]) -> Callable[[LLMRequest, dict[str, Any]], Verdict | None]:
    """Contradiction test: an entailed foil is regenerated (MAIA acts on entailment only;
    neutral foils were valid on inspection). ``labels`` receives item_id → last label."""

    def nli_contradiction(req: LLMRequest, data: dict[str, Any]) -> Verdict | None:
        res = nli.classify([(req.variables["caption"], str(data.get("foil", "")))], [req.item_id])[0]
        if not res.ok:
            return Verdict("reject", f"NLI failed: {res.error}")
        labels[req.item_id] = res.label
        if res.label == "entailment":
            return Verdict(
                "major", "The foil is entailed by the caption (it is still true): it must make the caption false."
            )
        return None

    return nli_contradiction


def structural_request(req: LLMRequest, data: dict[str, Any], prompt: Any, lang: str = "en") -> LLMRequest:
    cat = category(req.variables["category_key"], lang)
    return LLMRequest(
        item_id=req.item_id,
        prompt=prompt,
        variables={
            "category": cat.label,
            "criterion": cat.structural,
            "caption": req.variables["caption"],
            "foil": str(data.get("foil", "")),
        },
    )


def structural_verdict(data: dict[str, Any]) -> Verdict:
    if bool(data.get("valid")):
        return Verdict("pass", str(data.get("reason") or ""))
    return Verdict("major", f"Structural check: not a valid foil for the category. {data.get('reason') or ''}".strip())
