"""MAIA evaluation requests (§4.1 statement verification, §4.2 open-ended VQA)."""

from __future__ import annotations

from forge.evals.requests import RequestContext, letter_options
from forge.llm.types import LLMRequest


def build_request(c: RequestContext) -> LLMRequest:
    prompt = c.prompts[f"task:{c.item['task']}"]  # config/evals.yaml `prompts:` task → file
    if c.item["task"] == "statement_verification":
        return c.request(prompt, {"options": letter_options(c.options, "dot")})
    return c.request(prompt, {"question": c.item["question"]})
