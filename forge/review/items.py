"""Items as a reviewer sees and edits them: revision hashes, task data, box pre-annotations,
and edits checked against the item's contract. Dagster-free.

A *revision* is the hash of what a reviewer judges (question, options and their types, gold,
references, media, labels). A verdict is about one revision: when the item changes (a new
generation, or another reviewer's edit) the verdict is stale and the item needs review again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from forge.provenance.versioning import content_hash
from forge.review.labelconfig import BOX_LABEL, LETTERS
from forge.review.spec import Media, ReviewSpec
from forge.splits.gates import field_problem

REVISED_FIELDS = ("question", "options", "option_types", "answer", "references", "media_paths", "labels")
BOX_ANSWER = re.compile(
    r"^\s*(.+?)\s*:\s*\[[^\]]*\]\s*$"
)  # "label: [top, left, height, width]" (forge/evals/extract.py)
BOX_TOLERANCE = 0.005  # a box may overhang the image by rounding only (normalised units)


def as_list(v: Any) -> list[Any] | None:
    if v is None or (isinstance(v, float) and v != v):
        return None
    return [x for x in list(v)] if not isinstance(v, str) else [v]


def as_json(v: Any) -> dict[str, Any]:
    if isinstance(v, dict):
        return dict(v)
    if v is None or (isinstance(v, float) and v != v) or v == "":
        return {}
    try:
        out = json.loads(v)
    except (TypeError, ValueError):
        return {}
    return out if isinstance(out, dict) else {}


def revision(item: dict[str, Any]) -> str:
    """The hash of what a reviewer judges (labels compared as parsed JSON)."""
    parts = {f: item.get(f) for f in REVISED_FIELDS}
    for f in ("options", "option_types", "references", "media_paths"):
        parts[f] = as_list(parts[f])
    parts["labels"] = as_json(parts["labels"])
    return content_hash("review-revision", parts, length=16)


def local_url(rel: str) -> str:
    """Label Studio's URL of a file under its document root (the data dir)."""
    return "/data/local-files/?d=" + quote(str(rel).lstrip("/"))


def options_text(item: dict[str, Any], show_gold: bool) -> str:
    opts = as_list(item.get("options")) or []
    types = as_list(item.get("option_types")) or []
    gold = {p.strip().upper() for p in str(item.get("answer") or "").split(",")} if show_gold else set()
    lines = []
    for i, o in enumerate(opts):
        letter = LETTERS[i] if i < len(LETTERS) else str(i)
        mark = "  ✓ GOLD" if letter in gold else ""
        kind = f"  [{types[i]}]" if show_gold and i < len(types) and types[i] else ""
        lines.append(f"{letter}) {o}{kind}{mark}")
    return "\n".join(lines) or "(no options: open answer)"


def context_text(item: dict[str, Any]) -> str:
    """Labels (statements, foils, metaphors, ...) as short lines; boxes are drawn, not listed."""
    labels = {k: v for k, v in as_json(item.get("labels")).items() if k != "boxes"}
    lines = [f"{k}: {json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v}" for k, v in labels.items()]
    refs = as_list(item.get("references")) or []
    if refs:
        lines.append("references: " + " | ".join(str(r) for r in refs[:10]))
    return "\n".join(lines)[:4000] or "(none)"


def boxes_of(item: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in as_json(item.get("labels")).get("boxes") or [] if isinstance(b, dict) and b.get("box_norm_tlhw")]


def box_predictions(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The item's boxes as one Label Studio prediction (percent of the image), ids ``b<i>``."""
    result = []
    for i, b in enumerate(boxes_of(item)):
        top, left, height, width = (float(x) for x in b["box_norm_tlhw"])
        value = {"x": left * 100, "y": top * 100, "width": width * 100, "height": height * 100, "rotation": 0}
        result.append(
            {
                "id": f"b{i}",
                "from_name": "box",
                "to_name": "image",
                "type": "rectanglelabels",
                "value": {**value, "rectanglelabels": [BOX_LABEL]},
            }
        )
    return [{"model_version": "item", "result": result}] if result else []


def task_data(item: dict[str, Any], spec: ReviewSpec, video: str | None, kind: str = "review") -> dict[str, Any]:
    media = as_list(item.get("media_paths")) or []
    blind = kind == "human"
    data = {
        "item_id": str(item["item_id"]),
        "revision": revision(item),
        "benchmark": str(item.get("benchmark") or ""),
        "split": str(item.get("split") or ""),
        "task": str(item.get("task") or ""),
        "category": str(item.get("category") or ""),
        "heading": f"{item.get('benchmark')} · {item.get('task')} · {item.get('category')} · split "
        f"{item.get('split')} · item {item['item_id']}",
        "question": str(item.get("question") or ""),
        "options_text": options_text(item, spec.show_gold and not blind),
        "image": local_url(media[0]) if media else "",
    }
    if spec.media == Media.VIDEO:
        data["video"] = local_url(video) if video else ""
    if blind:
        data["instruction"] = (
            "Pick the option letter(s)" if as_list(item.get("options")) else "Type your answer in the box"
        )
    else:
        data["answer_text"] = str(item.get("answer") or "")
        data["context_text"] = context_text(item)
    return data


# -- edits ---------------------------------------------------------------------------------------


def box_answer(label: str, tlhw: list[float]) -> str:
    return f"{label}: [" + ", ".join(f"{v:.3f}" for v in tlhw) + "]"


def box_problem(tlhw: list[float]) -> str | None:
    top, left, height, width = tlhw
    if height <= 0 or width <= 0:
        return "box has no area"
    lo, hi = -BOX_TOLERANCE, 1 + BOX_TOLERANCE
    if min(top, left) < lo or top + height > hi or left + width > hi:
        return f"box [top {top:.3f}, left {left:.3f}, height {height:.3f}, width {width:.3f}] lies outside the image"
    return None


def apply_edits(
    item: dict[str, Any], edits: dict[str, Any], data_dir: Path | None
) -> tuple[dict[str, Any] | None, str]:
    """The edited item, or (None, why it was refused). ``edits``: ``question`` / ``answer``
    (text), ``options`` (list), ``boxes`` (index → [top, left, height, width] normalised).
    The edited item must pass the gates' field contract (``forge.splits.gates.field_problem``)
    and keep every box inside the image; otherwise the original stays."""
    new = dict(item)
    for f in ("question", "answer"):
        if f in edits:
            new[f] = str(edits[f]).strip()
    if "question" in edits and not new["question"]:
        return None, "empty_question: the corrected question is empty"
    if "options" in edits:
        opts = [str(o).strip() for o in edits["options"]]
        types = as_list(item.get("option_types"))
        if types is not None and len(types) != len(opts):
            return None, f"option_count: {len(opts)} options given, the item has {len(types)} (option types)"
        new["options"] = opts
    if edits.get("boxes"):
        labels = as_json(item.get("labels"))
        boxes = [dict(b) for b in labels.get("boxes") or []]
        for idx, tlhw in edits["boxes"].items():
            i = int(idx)
            if i >= len(boxes):
                return None, f"box_unknown: the item has no box {i}"
            why = box_problem([float(x) for x in tlhw])
            if why:
                return None, f"box_outside_image: {why}"
            boxes[i]["box_norm_tlhw"] = [round(float(x), 4) for x in tlhw]
            boxes[i].pop("box_px_xyxy", None)  # pixels no longer match; the normalised box is the truth
        labels["boxes"] = boxes
        new["labels"] = json.dumps(labels, ensure_ascii=False)
        if BOX_ANSWER.match(str(item.get("answer") or "")):  # a box item: its gold is its first box
            refs = [box_answer(str(b.get("label", "")), b["box_norm_tlhw"]) for b in boxes if b.get("box_norm_tlhw")]
            new["references"], new["answer"] = refs, refs[0]
    problem = field_problem(new, data_dir)
    if problem:
        return None, f"{problem[0]}: {problem[1]}"
    return new, ""
