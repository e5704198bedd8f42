"""ViMU evaluation (App. G): the official prompt per task (scripts/00-vimu_oe.py, 10-vimu_eg.py,
20-vimu_ss.py) when config/evals.yaml ``benchmarks.vimu.prompts`` names them, else the
recipe's own rendered guided/unguided prompt; and the official reading of a selection reply."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from forge.evals import extract as ex
from forge.evals.requests import EvalRequest, RequestContext, SkipItem
from forge.items.cells import as_list
from forge.llm.types import LLMRequest

# config/evals.yaml `prompts:` keys (the pipeline registers each as `task:<key>`)
PROMPT_KEYS = ("OE", "EG", "SS", "SS_guided")
INSTRUCTION = "Select all correct options. Return only the option letters exactly as given. Do not add explanations."
TASK_NAMES = {"RM": "rhetoric_mechanisms", "SV": "social_value_signals"}  # official keys not published


@lru_cache(maxsize=1)
def _taxonomy() -> Any:
    from .taxonomy import load_taxonomy

    return load_taxonomy()


def official_prompt(item: dict[str, Any], extra: dict[str, Any], variant: str) -> tuple[str, dict[str, str]]:
    """(prompt key of ``PROMPT_KEYS``, variables) of the official ViMU prompt for this item
    and setting variant."""
    task = item.get("category")
    transcript = str(extra.get("transcript") or "")
    if task == "OE":
        return "OE", {"question": item["question"], "transcript": transcript}
    opts = "\n".join(f"{chr(65 + i)}. {o}" for i, o in enumerate(as_list(item.get("options"))))
    v = {"question": item["question"], "transcript": transcript, "instruction": INSTRUCTION, "options": opts}
    if task == "EG":
        return "EG", v
    v["task_name"] = TASK_NAMES.get(task, str(task))
    if variant == "guided":
        axis = "rhetoric" if task == "RM" else "social_value"
        return "SS_guided", {**v, "guidance": _taxonomy().grouped_guidance(axis)}
    return "SS", v


def build_request(c: RequestContext) -> LLMRequest:
    variant = c.setting.variant or "unguided"
    if "task:OE" in c.prompts:  # the official prompts (config prompts:)
        key, v = official_prompt(c.item, c.extra, variant)
        return c.request(c.prompts[f"task:{key}"], v)
    text = (c.extra.get("prompts") or {}).get(variant)  # the recipe's own rendered prompts
    if not text:
        raise SkipItem(f"no_{c.setting.variant}_prompt")
    return c.request(c.prompts[c.setting.prompt], {"prompt": text})


def parse_reply(er: EvalRequest, text: str | None, options: dict[str, Any]) -> ex.Extraction | None:
    """A selection reply as the official scripts read it: JSON ``{"selected_options": [...]}``
    (an empty list allowed), keys cleaned; option ``vimu_lenient_parse`` also reads prose letters."""
    if er.kind != "multi":
        return None
    keys = [chr(65 + i) for i in range(len(er.options or []))]
    return extract_vimu_selection(
        text, keys, options=er.options, prose_fallback=bool(options.get("vimu_lenient_parse"))
    )


# -- selected option keys (scripts/10-vimu_eg.py, 20-vimu_ss.py) ------------------------------
#
# The official prompt asks for JSON ``{"selected_options": [...]}`` and allows an empty list. The
# official run loads the whole reply as JSON; a reply that does not load (prose, a code fence) or
# is not an object is an inference error stored as an empty selection, and so scores 0. The keys
# are then cleaned: a non-list is empty; each key stringified and stripped, kept only if it is one
# of the item's option keys, de-duplicated in order. That is the default here. The named option
# ``vimu_lenient_parse`` (``prose_fallback=True``) also reads JSON inside a code fence or text and,
# failing that, prose letters through the multi-select rules of ``extract_choice``.

_JSON_BLOCK = re.compile(r"\{.*\}", re.S)


def _json_object(text: str) -> dict | None:
    t = text.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", t, re.S)
    if fence:
        t = fence.group(1)
    for cand in (t, *(m.group(0) for m in [_JSON_BLOCK.search(t)] if m)):
        try:
            obj = json.loads(cand)
        except (TypeError, ValueError):
            continue
        if isinstance(obj, dict):
            return obj
    return None


def clean_option_keys(values: object, valid: Sequence[str]) -> list[str]:
    """Official cleaning: a non-list is empty; keys stripped, only valid ones, first occurrence kept."""
    if not isinstance(values, list):
        return []
    ok = set(valid)
    out: list[str] = []
    for v in values:
        k = str(v).strip()
        if k in ok and k not in out:
            out.append(k)
    return out


def _whole_json(text: str) -> object:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def extract_vimu_selection(
    reply: str | None, valid_keys: Sequence[str], *, options: Sequence[str] | None = None, prose_fallback: bool = False
) -> ex.Extraction:
    """ViMU EG / RM / SV selection. ``ok`` with an empty ``letters`` tuple is a valid empty
    selection (the official prompt allows "[]"). A reply that is not a JSON object is a failure
    (``not_json``), scored as nothing selected, unless ``prose_fallback`` reads it otherwise. A
    JSON object without ``selected_options`` selects nothing (as officially: ``.get`` → [])."""
    if reply is None or not str(reply).strip():
        return ex.Extraction(ok=False, reason="empty")
    obj = _whole_json(str(reply))
    if isinstance(obj, dict):
        keys = clean_option_keys(obj.get("selected_options", []), valid_keys)
        return ex.Extraction(letters=tuple(keys), ok=True, method="json", values={"selected_options": keys})
    if prose_fallback:
        obj = _json_object(str(reply))
        if obj is not None:
            keys = clean_option_keys(obj.get("selected_options", []), valid_keys)
            return ex.Extraction(
                letters=tuple(keys), ok=True, method="json_embedded", values={"selected_options": keys}
            )
        e = ex.extract_choice(reply, list(options or valid_keys), multi=True)
        if e.ok:
            keys = [k for k in e.letters if k in set(valid_keys)]
            return ex.Extraction(
                letters=tuple(keys), ok=True, method=f"prose_{e.method}", values={"selected_options": keys}
            )
        return e
    return ex.Extraction(ok=False, reason="not_json")
