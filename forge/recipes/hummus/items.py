"""The six Hummus tasks of Table 1, built from annotations.

Classification covers Yes / No / WIDLII items (Yes and WIDLII are positives, No negative;
Discard items are not tested). The other five tasks cover the positive items only. The
question is the paper's full prompt text: ``Caption: {caption}\\n\\n{instructions}``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

PREFIX = "The humor of the given image-and-caption combination involves metaphor use."
INSTRUCTIONS = {
    "classification": (
        "Does the humor of the given image-and-caption combination involve metaphor use? "
        "Answer the question with Yes or No."
    ),
    "naming": (
        PREFIX + ' Which conceptual metaphor is used? Answer the question in "TARGET DOMAIN IS '
        'SOURCE DOMAIN" format (e.g., "LOVE IS A JOURNEY").'
    ),
    "image_box": (
        PREFIX + " Which object in the image is related to the metaphor? Answer with its label and "
        'normalized bounding box coordinates in "label: [top, left, height, width]" format.'
    ),
    "image_label": (
        PREFIX + " Which object in the image is related to the metaphor? Answer the question with a single word."
    ),
    "caption_highlight": (
        PREFIX + " Which part of the caption is related to the metaphor? Surround it with a pair of <i></i> tag."
    ),
    "explanation": (
        "How does metaphor use contribute to the humor of the given image-and-caption combination? "
        "Explain in no more than 30 words."
    ),
}
TASKS = tuple(INSTRUCTIONS)
POSITIVE = ("Yes", "WIDLII")


def question(task: str, caption: str) -> str:
    return f"Caption: {caption}\n\n{INSTRUCTIONS[task]}"


def item_id(annotation_id: str, task: str) -> str:
    return "hum_" + hashlib.sha1(f"{annotation_id}\0{task}".encode()).hexdigest()[:12]


def build_items(ann: dict[str, Any], regions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Items for one annotation row (``hummus_annotations``) and its region rows."""
    verdict = ann["verdict"]
    if verdict not in ("Yes", "No", "WIDLII"):
        return []
    positive = verdict in POSITIVE
    regions = sorted(regions, key=lambda r: r["region_index"])
    boxes = [
        {
            "label": r["label"],
            "box_norm_tlhw": [float(r[f"box_norm_{k}"]) for k in ("top", "left", "height", "width")],
            "box_px_xyxy": [int(r["box_px_x0"]), int(r["box_px_y0"]), int(r["box_px_x1"]), int(r["box_px_y1"])],
        }
        for r in regions
    ]

    def as_list(v: Any) -> list:  # parquet hands lists back as numpy arrays
        return [] if v is None else [x.item() if hasattr(x, "item") else x for x in v]

    labels = {
        "verdict": verdict,
        "metaphors": as_list(ann.get("metaphors")),
        "devices": as_list(ann.get("devices")),
        "caption_origin": ann.get("caption_origin"),
        "boxes": boxes,
        "image_width": int(ann["width"]) if ann.get("width") is not None else None,
        "image_height": int(ann["height"]) if ann.get("height") is not None else None,
    }
    common = {
        "benchmark": "hummus",
        "category": verdict,
        "media_paths": [ann["path"]],
        "unit_id": ann["frame_id"],
        "source_item_id": ann["item_id"],
        "source": ann["source"],
        "channel": ann.get("channel"),
        "batch": ann["batch"],
        "labels": json.dumps(labels),
        "backend": ann["backend"],
        "model": ann["model"],
        "prompt_hash": ann["prompt_hash"],
        "extra": json.dumps(
            {
                "annotation_id": ann["annotation_id"],
                "caption": ann["caption"],
                "caption_origin": ann.get("caption_origin"),
                **({"advisory": json.loads(ann["advisory"])} if isinstance(ann.get("advisory"), str) else {}),
            }
        ),
    }

    def row(task: str, answer: str, references: list[str] | None, options=None, option_types=None) -> dict[str, Any]:
        return {
            "item_id": item_id(ann["annotation_id"], task),
            "task": task,
            "question": question(task, ann["caption"]),
            "options": options,
            "option_types": option_types,
            "answer": answer,
            "references": references,
            **common,
        }

    # Fixed Yes/No order, as in the paper's main prompt (randomised order is an eval setting).
    out = [
        row(
            "classification",
            "A" if positive else "B",
            ["Yes" if positive else "No"],
            ["Yes", "No"],
            ["positive", "negative"],
        )
    ]
    if not positive:
        return out
    metaphors = labels["metaphors"]
    box_answers = [f"{b['label']}: [" + ", ".join(f"{v:.3f}" for v in b["box_norm_tlhw"]) + "]" for b in boxes]
    # A validated annotation has every part; a stub one kept as advisory may lack some (no item then).
    if metaphors:
        out.append(row("naming", metaphors[0], metaphors))
    if boxes:
        out += [
            row("image_box", box_answers[0], box_answers),
            row("image_label", boxes[0]["label"], [b["label"] for b in boxes]),
        ]
    if ann.get("caption_highlighted"):
        out.append(row("caption_highlight", ann["caption_highlighted"], [ann["caption_highlighted"]]))
    if ann.get("explanation"):
        out.append(row("explanation", ann["explanation"], [ann["explanation"]]))
    return out
