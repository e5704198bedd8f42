"""ViMU evaluation requests (App. G): the item carries its own rendered guided/unguided prompt."""

from __future__ import annotations

from forge.evals.requests import RequestContext, SkipItem
from forge.llm.types import LLMRequest


def build_request(c: RequestContext) -> LLMRequest:
    text = (c.extra.get("prompts") or {}).get(c.setting.variant or "unguided")
    if not text:
        raise SkipItem(f"no_{c.setting.variant}_prompt")
    return c.request(c.prompts[c.setting.prompt], {"prompt": text})
