"""VAGUE evaluation (§5.1 LM / SM / VLM, §5.4 CoT, App. I free-form): inputs as the official
utils/util.py renders them, and the official reading of a multiple-choice reply."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from forge.evals import extract as ex
from forge.evals.requests import EvalRequest, RequestContext, SkipItem
from forge.llm.types import LLMRequest


def build_request(c: RequestContext) -> LLMRequest:
    # official utils/util.py: the indirect utterance, options "A: text" sorted by letter
    v = {
        "utterance": c.item.get("indirect_expression") or c.item["question"],
        "choices": "\n".join(f"{chr(65 + i)}: {o}" for i, o in enumerate(c.options or [])),
    }
    if c.setting.variant == "free_form":  # App. I: answer in words, scored against the correct option
        v = {"utterance": v["utterance"], "subject": c.labels.get("subject") or "the listener"}
        c.context["answer_type"] = "free_form"
    if c.setting.input == "self_caption":
        cap = c.captions.get(c.item["item_id"])
        if not cap:
            raise SkipItem("caption_failed")
        v["caption"] = cap
        c.context["caption"] = cap
        return c.request(c.prompts[c.setting.prompt], v, [])
    return c.request(c.prompts[c.setting.prompt], v)


def parse_reply(er: EvalRequest, text: str | None, options: dict[str, Any]) -> ex.Extraction | None:
    """A multiple-choice reply as the official evaluation reads it (free-form replies are text)."""
    if er.kind != "mcq":
        return None
    return extract_vague(text, er.options or [])


# -- the official reading of a multiple-choice reply ----------------------------------------------
#
# The official repository publishes no answer parser (outputs are stored raw). Its prompts ask
# for "only the letter among A,B,C and D"; the CoT prompts for "Your answer1 (reasoning) : ..."
# then "Your answer2 (intention) : X". We read the text after the last "answer2 ... :" marker when
# there is one, then apply the general multiple-choice rules (``extract_choice``).

_ANSWER2 = re.compile(r"answer\s*2[^:\n]*:", re.I)


def extract_vague(reply: str | None, options: Sequence[str]) -> ex.Extraction:
    if reply is None or not str(reply).strip():
        return ex.Extraction(ok=False, reason="empty")
    marks = list(_ANSWER2.finditer(str(reply)))
    if marks and str(reply)[marks[-1].end() :].strip():
        e = ex.extract_choice(str(reply)[marks[-1].end() :], options)
        if e.ok:
            return ex.Extraction(letters=e.letters, ok=True, method=f"answer2_{e.method}")
    return ex.extract_choice(reply, options)
