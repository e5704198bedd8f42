"""VAGUE evaluation requests (§5.1): LM (text only), SM (the model's own caption), VLM (image)."""

from __future__ import annotations

from forge.evals.requests import RequestContext, SkipItem, letter_options
from forge.llm.types import LLMRequest


def build_request(c: RequestContext) -> LLMRequest:
    v = {"question": c.item["question"], "options": letter_options(c.options)}
    if c.setting.input == "self_caption":
        cap = c.captions.get(c.item["item_id"])
        if not cap:
            raise SkipItem("caption_failed")
        v["caption"] = cap
        c.context["caption"] = cap
        return c.request(c.prompts[c.setting.prompt], v, [])
    return c.request(c.prompts[c.setting.prompt], v)
