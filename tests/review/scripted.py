"""A scripted reviewer: Label Studio annotation results as the review form produces them."""

from __future__ import annotations

from typing import Any

from forge.review.client import LabelStudio


def choice(name: str, value: str) -> dict[str, Any]:
    return {"from_name": name, "to_name": "question", "type": "choices", "value": {"choices": [value]}}


def choices(name: str, *values: str) -> dict[str, Any]:
    """Several choices in one control (what a single-choice control never sends from the form)."""
    return {"from_name": name, "to_name": "question", "type": "choices", "value": {"choices": list(values)}}


def text(name: str, value: str) -> dict[str, Any]:
    return {"from_name": name, "to_name": "question", "type": "textarea", "value": {"text": [value]}}


def box(idx: int, top: float, left: float, height: float, width: float) -> dict[str, Any]:
    value = {"x": left * 100, "y": top * 100, "width": width * 100, "height": height * 100, "rotation": 0}
    return {
        "id": f"b{idx}",
        "from_name": "box",
        "to_name": "image",
        "type": "rectanglelabels",
        "value": {**value, "rectanglelabels": ["region"]},
        "original_width": 96,
        "original_height": 64,
    }


ACCEPT = [choice("verdict", "accept")]


def reject(reason: str) -> list[dict[str, Any]]:
    return [choice("verdict", "reject"), choice("reason", reason)]


def edit(**fields: str) -> list[dict[str, Any]]:
    return [choice("verdict", "edit"), *(text(f"corrected_{k}", v) for k, v in fields.items())]


def tasks_by_item(ls: LabelStudio, project_title_part: str) -> dict[str, dict[str, Any]]:
    out = {}
    for p in ls.projects():
        if project_title_part in p["title"]:
            for t in ls.tasks(p["id"]):
                out[t["data"]["item_id"]] = t
    return out


def submit(
    ls: LabelStudio, task: dict[str, Any], user: int, result: list[dict[str, Any]], seconds: float = 30.0
) -> None:
    ls.annotate(int(task["id"]), result, completed_by=user, lead_time=seconds)
