"""Hummus evaluation requests (Table 1 prompts; §6.3 replaces the image by a description)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from forge.evals.requests import RequestContext, SkipItem, as_list, jload
from forge.llm.types import LLMRequest


def build_request(c: RequestContext) -> LLMRequest:
    if c.setting.input == "description":
        desc = c.descriptions.get(c.item["item_id"])
        if not desc:
            raise SkipItem("no_image_description")
        c.context["description"] = desc
        return c.request(c.prompts[c.setting.prompt], {"description": desc, "question": c.item["question"]}, [])
    return c.request(c.prompts[c.setting.prompt], {"question": c.item["question"]})


def descriptions(items: pd.DataFrame, evidence: pd.DataFrame) -> dict[str, str]:
    """§6.3 text for the image: a human ``image_description`` imported into the item's
    ``extra`` when present, else a literal description assembled from the vision stage's
    evidence for the frame (objects, people, on-screen text)."""
    out: dict[str, str] = {}
    ev_by: dict[Any, dict[str, Any]] = {r["unit_id"]: r for r in evidence.to_dict("records")} if len(evidence) else {}
    for r in items.to_dict("records"):
        desc = jload(r.get("extra")).get("image_description")
        if not desc and r.get("unit_id") in ev_by:
            e = ev_by[r["unit_id"]]
            parts = []
            tags = as_list(e.get("tags"))
            if tags:
                parts.append("The image shows " + ", ".join(map(str, tags[:10])) + ".")
            if int(e.get("persons") or 0):
                parts.append(f"{int(e['persons'])} person(s) are visible.")
            if e.get("ocr_text"):
                parts.append(f"Text in the image: \"{str(e['ocr_text'])[:200]}\".")
            desc = " ".join(parts)
        if desc:
            out[r["item_id"]] = desc
    return out
