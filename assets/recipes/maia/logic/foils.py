"""Foils (App. A.7–A.8): one minimal, category-specific edit per true statement, then the
structural check (LLM judge: is F a valid foil of C for the category?) and the NLI
contradiction test. Entailment, an identical foil, a non-minimal edit or an invalid
structure send the foil back for regeneration through ``forge.llm.refine``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from forge.checks.nli import NLIBackend
from forge.checks.text import canonical, check_language, token_edit_distance, tokens
from forge.llm.refine import Verdict
from forge.llm.types import LLMRequest

from .taxonomy import category


def foil_prompt_file(prompts_dir: Path, category: str) -> Path:
    return prompts_dir / f"foil_{category}.yaml"


def edit_size(statement: str, foil: str, lang: str = "en") -> tuple[int, float]:
    """Token edit distance and its ratio to the statement's length (``lang``'s tokenisation:
    in Italian ``dell'auto`` → ``dell'`` + ``auto``, so swapping the noun is one edit)."""
    d = token_edit_distance(statement, foil, lang)
    return d, d / max(len(tokens(statement, lang)), 1)


# Feedback a regenerated foil is sent, in the recipe's language (the conversation's language).
FEEDBACK: dict[str, dict[str, str]] = {
    "en": {
        "empty": "The foil is empty.",
        "identical": "The foil is identical to the caption: change the category-specific block.",
        "not_minimal": "The edit is not minimal ({ratio:.0%} of the words changed): keep the sentence "
        "structure and change only the category-specific block.",
        "entailed": "The foil is entailed by the caption (it is still true): it must make the caption false.",
        "structural": "Structural check: not a valid foil for the category.",
    },
    "it": {
        "empty": "Il foil è vuoto.",
        "identical": "Il foil è identico alla didascalia: cambia la parte specifica della categoria.",
        "not_minimal": "La modifica non è minima (cambia il {ratio:.0%} delle parole): mantieni la struttura "
        "della frase e cambia soltanto la parte specifica della categoria.",
        "entailed": "Il foil è implicato dalla didascalia (è ancora vero): deve rendere falsa la didascalia.",
        "structural": "Controllo strutturale: non è un foil valido per la categoria.",
    },
}


def feedback(key: str, lang: str = "en", **kw: object) -> str:
    return FEEDBACK[check_language(lang)][key].format(**kw)


def minimal_edit_check(
    max_edit_ratio: float, lang: str = "en"
) -> Callable[[LLMRequest, dict[str, Any]], Verdict | None]:
    def minimal_edit(req: LLMRequest, data: dict[str, Any]) -> Verdict | None:
        caption, foil = req.variables["caption"], str(data.get("foil", ""))
        if not foil.strip():
            return Verdict("major", feedback("empty", lang))
        if canonical(foil) == canonical(caption):
            return Verdict("major", feedback("identical", lang))
        _, ratio = edit_size(caption, foil, lang)
        if ratio > max_edit_ratio:
            return Verdict("major", feedback("not_minimal", lang, ratio=ratio))
        return None

    return minimal_edit


def nli_check(
    nli: NLIBackend, labels: dict[str, str], lang: str = "en"
) -> Callable[[LLMRequest, dict[str, Any]], Verdict | None]:
    """Contradiction test: an entailed foil is regenerated (MAIA acts on entailment only;
    neutral foils were valid on inspection). ``labels`` receives item_id → last label."""

    def nli_contradiction(req: LLMRequest, data: dict[str, Any]) -> Verdict | None:
        res = nli.classify([(req.variables["caption"], str(data.get("foil", "")))], [req.item_id])[0]
        if not res.ok:
            return Verdict("reject", f"NLI failed: {res.error}")
        labels[req.item_id] = res.label
        if res.label == "entailment":
            return Verdict("major", feedback("entailed", lang))
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


def structural_verdict(data: dict[str, Any], lang: str = "en") -> Verdict:
    if bool(data.get("valid")):
        return Verdict("pass", str(data.get("reason") or ""))
    return Verdict("major", f"{feedback('structural', lang)} {data.get('reason') or ''}".strip())
