"""Hummus evaluation requests (Table 1 prompts; §6.3 replaces the image by a description, laid
out as the official monomodal.py lays out its text-only input)."""

from __future__ import annotations

import hashlib
from typing import Any

import pandas as pd

from forge.evals import extract as ex
from forge.evals.requests import EvalRequest, RequestContext, SkipItem
from forge.items.cells import as_list, as_object
from forge.llm.types import LLMRequest

from .boxes import BoxError, parse_box

# §6.2: the top-3 Classification prompts of the pilot study, each an evaluation setting
# (config/evals.yaml ``variant``); they re-ask Classification only.
CLASSIFICATION_TAIL = "Answer the question with Yes or No."
CLASSIFICATION_VARIANTS = {
    "yes_no_explained": (
        "Answer the question with Yes (i.e., metaphor use is involved) or No (i.e., metaphor use is not involved)."
    ),
    "no_or_yes": "Answer the question with No or Yes.",
    "a_or_b": "Answer the question with A or B.",
}
# CLAS11 (the official model_evaluation/a_or_b.py with prompts.options_CLAS11): the two options in
# full, listed after "Choose from the following options:" and before the A-or-B instruction.
AB_OPTIONS = {
    "pos": "The humor of the given image-and-caption combination involves metaphor use.",
    "neg": "The humor of the given image-and-caption combination does not involve metaphor use.",
}
AB_LEAD = "Choose from the following options:"


def ab_order(seed: str, item_id: str) -> list[str]:
    """§6.2 prompt (3): the order of the two options is randomised per test item (seeded)."""
    flip = int(hashlib.sha1(f"{seed}:{item_id}".encode()).hexdigest()[:8], 16) % 2
    return ["neg", "pos"] if flip else ["pos", "neg"]


def classification_variant(c: RequestContext) -> str:
    """The item's Classification question with the setting's §6.2 answer instruction."""
    variant = str(c.setting.variant)
    question = str(c.item["question"])
    instruction = CLASSIFICATION_VARIANTS[variant]
    if variant == "a_or_b":
        order = ab_order(c.seed, c.item["item_id"])
        c.context["ab_order"] = order
        listing = "\n".join(f"{'AB'[k]}. {AB_OPTIONS[o]}" for k, o in enumerate(order))
        instruction = f"{AB_LEAD}\n{listing}\n{instruction}"
    if CLASSIFICATION_TAIL in question:
        return question.replace(CLASSIFICATION_TAIL, instruction)
    return f"{question}\n{instruction}"  # an item worded otherwise (an imported release): the instruction appended


def build_request(c: RequestContext) -> LLMRequest:
    if c.setting.variant in CLASSIFICATION_VARIANTS:
        if c.item["task"] != "classification":  # §6.2 re-ran Classification only
            raise SkipItem("classification_only_setting")
        return c.request(c.prompts[c.setting.prompt], {"question": classification_variant(c)})
    if c.setting.input == "description":
        if c.item["task"] == "image_box":  # the official monomodal tasks have no ImageBbox
            raise SkipItem("no_text_only_image_box_task")
        desc = c.descriptions.get(c.item["item_id"])
        if not desc:
            raise SkipItem("no_image_description")
        c.context["description"] = desc
        return c.request(c.prompts[c.setting.prompt], text_variables(c.item, desc), [])
    return c.request(c.prompts[c.setting.prompt], {"question": c.item["question"]})


# Hummus monomodal.py: Classification uses CLAS06, which only swaps the order of the two answers.
_CLAS02_TAIL, _CLAS06_TAIL = "Answer the question with Yes or No.", "Answer the question with No or Yes."


def text_variables(item: dict[str, Any], description: str) -> dict[str, str]:
    """The text-only ablation input of the official monomodal.py: instructions, blank line,
    "Image: <description>", "Caption: <caption>". Our items hold "Caption: ...\n\n<instructions>"."""
    caption_line, _, instructions = str(item["question"]).partition("\n\n")
    if not instructions:
        caption_line, instructions = "", caption_line
    if item.get("task") == "classification":
        instructions = instructions.replace(_CLAS02_TAIL, _CLAS06_TAIL)
    return {"instructions": instructions, "description": description, "caption_line": caption_line}


def descriptions(items: pd.DataFrame, evidence: pd.DataFrame) -> dict[str, str]:
    """§6.3 text for the image: a human ``image_description`` imported into the item's
    ``extra`` when present, else a literal description assembled from the vision stage's
    evidence for the frame (objects, people, on-screen text)."""
    out: dict[str, str] = {}
    ev_by: dict[Any, dict[str, Any]] = {r["unit_id"]: r for r in evidence.to_dict("records")} if len(evidence) else {}
    for r in items.to_dict("records"):
        desc = as_object(r.get("extra")).get("image_description")
        if not desc and r.get("unit_id") in ev_by:
            e = ev_by[r["unit_id"]]
            parts = []
            tags = as_list(e.get("tags"))
            if tags:
                parts.append("The image shows " + ", ".join(map(str, tags[:10])) + ".")
            if int(e.get("persons") or 0):
                parts.append(f"{int(e['persons'])} person(s) are visible.")
            if e.get("ocr_text"):
                parts.append(f'Text in the image: "{str(e["ocr_text"])[:200]}".')
            desc = " ".join(parts)
        if desc:
            out[r["item_id"]] = desc
    return out


def ab_reply(er: EvalRequest, text: str | None) -> ex.Extraction:
    """An "A or B" reply read against the item's option order, as the Yes / No letter of the item."""
    order = list(er.context["ab_order"])
    e = ex.extract_choice(text, [AB_OPTIONS[o] for o in order])
    if not e.ok:
        return e
    chosen = order["AB".index(e.letters[0])]
    return ex.Extraction(
        letters=("A" if chosen == "pos" else "B",), ok=True, method=e.method, values={"ab_letter": e.letters[0]}
    )


def parse_reply(er: EvalRequest, text: str | None, options: dict[str, Any]) -> ex.Extraction | None:
    """ImageBbox replies in any common box convention, converted to the requested normalised
    [top, left, height, width] with the convention recorded (assets/recipes/hummus/logic/boxes.py).
    Scoring options: ``hummus_box_order`` / ``hummus_box_scale`` (rules for what the reply does
    not say), ``hummus_box_strict: true`` (only the literal Table 1 format is read)."""
    if er.kind == "yesno" and er.context.get("ab_order"):
        return ab_reply(er, text)
    if er.kind != "box" or options.get("hummus_box_strict"):
        return None
    labels = as_object(er.item.get("labels"))
    w, h = labels.get("image_width"), labels.get("image_height")
    try:
        b = parse_box(
            text,
            (int(w), int(h)) if w and h else None,
            order_rule=str(options.get("hummus_box_order", "requested")),
            scale_rule=str(options.get("hummus_box_scale", "thousand")),
        )
    except BoxError as e:
        return ex.Extraction(ok=False, reason=e.reason, values={"error": str(e)})
    return ex.Extraction(ok=True, method="box", text=f"{b.label}: {b.box}", values=b.values())
