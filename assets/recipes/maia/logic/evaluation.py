"""MAIA evaluation requests (§4.1 statement verification, §4.2 open-ended VQA).

MAIA was evaluated in Italian (§4.1: the best of 16 Italian and 16 English VSV prompts was an
Italian one), so each item is asked in its own language: ``task:<task>@<lang>`` (config/evals.yaml
``prompts:``) serves items whose text is in ``<lang>``, ``task:<task>`` (Italian, the paper's) the rest.
"""

from __future__ import annotations

from typing import Any

from forge.checks.language import detect
from forge.evals.requests import RequestContext, letter_options
from forge.llm.types import LLMRequest

MIN_CONFIDENCE = 0.5  # below this the item's language is unclear: the paper's prompt


def item_language(options: list[str] | None, question: str) -> str | None:
    """The language of the text the model reads (the two statements, or the question)."""
    found = detect(" ".join(str(o) for o in options) if options else str(question or ""))
    return found.language if found.confidence >= MIN_CONFIDENCE else None


def task_prompt(prompts: dict[str, Any], task: str, options: list[str] | None, question: str) -> Any:
    """The prompt of the item's task in the item's language (config/evals.yaml ``prompts:``)."""
    lang = item_language(options, question)
    return prompts.get(f"task:{task}@{lang}") or prompts[f"task:{task}"]


def build_request(c: RequestContext) -> LLMRequest:
    prompt = task_prompt(c.prompts, c.item["task"], c.options, str(c.item.get("question") or ""))
    if c.item["task"] == "statement_verification":
        return c.request(prompt, {"options": letter_options(c.options, "dot")})
    return c.request(prompt, {"question": c.item["question"]})
