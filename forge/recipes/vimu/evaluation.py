"""ViMU evaluation (App. G): the official prompt per task (scripts/00-vimu_oe.py, 10-vimu_eg.py,
20-vimu_ss.py) when config/evals.yaml ``benchmarks.vimu.prompts`` names them, else the
recipe's own rendered guided/unguided prompt; and the official reading of a selection reply."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from forge.evals import extract as ex
from forge.evals.requests import EvalRequest, RequestContext, SkipItem, as_list
from forge.llm.types import LLMRequest

# config/evals.yaml `prompts:` keys (the pipeline registers each as `task:<key>`)
PROMPT_KEYS = ("OE", "EG", "SS", "SS_guided")
INSTRUCTION = "Select all correct options. Return only the option letters exactly as given. Do not add explanations."
TASK_NAMES = {"RM": "rhetoric_mechanisms", "SV": "social_value_signals"}  # official keys not published


@lru_cache(maxsize=1)
def _taxonomy() -> Any:
    from forge.recipes.vimu.taxonomy import load_taxonomy

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
    return ex.extract_vimu_selection(
        text, keys, options=er.options, prose_fallback=bool(options.get("vimu_lenient_parse"))
    )
