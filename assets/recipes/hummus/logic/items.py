"""The six Hummus tasks of Table 1, built from annotations.

Classification covers Yes / No / WIDLII items (Yes and WIDLII are positives, No negative;
Discard items are not tested). The other five tasks cover the positive items only. The
question is the paper's full prompt text: ``Caption: {caption}\\n\\n{instructions}``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from forge.items.cells import as_list

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
DETAIL_TASKS = TASKS[1:]  # the tasks built from the detailed annotation (positives only)
# items.on_detail_failure (assets/recipes/hummus/config.yaml)
KEEP_CLASSIFICATION = "keep_classification"  # paper: every Yes / No / WIDLII pair is classified
DROP_BALANCED = "drop_balanced"  # drop the pair and keep the positive share with matching drops
ON_DETAIL_FAILURE = (KEEP_CLASSIFICATION, DROP_BALANCED)
BALANCE_PARTNER_DROPPED = "balance_partner_dropped"


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
    if not positive or detail_reject(ann):  # verdict-only row: Classification only
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


@dataclass
class Selection:
    """The annotation rows that make items, and the item rejects of the others."""

    kept: list[dict[str, Any]]
    rejects: list[dict[str, Any]] = field(default_factory=list)  # item_id, reason, detail, related_id


def detail_reject(ann: dict[str, Any]) -> str | None:
    """The failing check of a verdict-only annotation row (parquet hands nulls back as NaN)."""
    v = ann.get("detail_reject")
    return v if isinstance(v, str) and v else None


def _order(ann: dict[str, Any]) -> str:  # a fixed, content-free order for choosing partners
    return hashlib.sha1(str(ann["annotation_id"]).encode()).hexdigest()


def select_annotations(anns: list[dict[str, Any]], policy: str = KEEP_CLASSIFICATION) -> Selection:
    """Which annotation rows of one batch make items, given verdict-only rows (``detail_reject``).

    ``keep_classification`` (the paper's construction, §6: Classification covers every Yes / No /
    WIDLII pair, its label is the verdict): a verdict-only pair keeps its classification item;
    its detail tasks are rejected with the failing check as reason. ``drop_balanced``: a
    verdict-only pair is dropped whole, then pairs of the other class are dropped (reason
    ``balance_partner_dropped``, ``related_id`` a dropped pair's item) until the positive share
    among the classified pairs is what it was before the drops, so the Yes/No balance does not
    move. Splits are stratified by category downstream, so each split keeps the share too."""
    if policy not in ON_DETAIL_FAILURE:
        raise ValueError(f"items.on_detail_failure must be one of {ON_DETAIL_FAILURE}, got {policy!r}")
    out = Selection(kept=[])
    classified = [a for a in anns if a["verdict"] in ("Yes", "No", "WIDLII")]
    failed = [a for a in classified if detail_reject(a)]
    for a in failed:
        positive = a["verdict"] in POSITIVE
        if policy == KEEP_CLASSIFICATION:
            tasks = DETAIL_TASKS if positive else ()  # a No has no detail tasks to lose
        else:
            tasks = TASKS if positive else ("classification",)
        why = "; ".join(list(a.get("detail_problems") if a.get("detail_problems") is not None else []))
        out.rejects += [
            {"item_id": item_id(a["annotation_id"], t), "reason": detail_reject(a), "detail": why} for t in tasks
        ]
    if policy == KEEP_CLASSIFICATION:
        out.kept = list(anns)
        return out
    dropped = {a["annotation_id"] for a in failed}
    n_pos = sum(a["verdict"] in POSITIVE for a in classified)
    n_neg = len(classified) - n_pos
    left = [a for a in classified if a["annotation_id"] not in dropped]
    pos = sorted((a for a in left if a["verdict"] in POSITIVE), key=_order)
    neg = sorted((a for a in left if a["verdict"] not in POSITIVE), key=_order)
    lost_pos = [a for a in failed if a["verdict"] in POSITIVE]
    lost_neg = [a for a in failed if a["verdict"] not in POSITIVE]
    # as many pairs as are left, at the positive share the batch had before the drops (rounded)
    keep_pos, keep_neg = len(pos), len(neg)
    if n_pos and n_neg:
        if round(keep_pos * n_neg / n_pos) <= len(neg):
            keep_neg = round(keep_pos * n_neg / n_pos)
        else:  # too few negatives left: they set the size
            keep_pos = min(len(pos), round(keep_neg * n_pos / n_neg))
    for extra, partners in ((pos[keep_pos:], lost_neg), (neg[keep_neg:], lost_pos)):
        for j, a in enumerate(extra):
            dropped.add(a["annotation_id"])
            rel = item_id(partners[j % len(partners)]["annotation_id"], "classification") if partners else None
            for t in TASKS if a["verdict"] in POSITIVE else ("classification",):
                out.rejects.append(
                    {
                        "item_id": item_id(a["annotation_id"], t),
                        "reason": BALANCE_PARTNER_DROPPED,
                        "detail": "dropped to keep the batch's Yes/No share after annotation failures",
                        "related_id": rel,
                    }
                )
    out.kept = [a for a in anns if a["annotation_id"] not in dropped]
    return out
