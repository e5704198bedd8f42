"""Items as a reviewer sees and edits them: revision hashes, task data, box pre-annotations,
and edits checked against the item's contract. Dagster-free.

A *revision* is the hash of what a reviewer judges (question, options and their types, gold,
references, media, labels). A verdict is about one revision: when the item changes (a new
generation, or another reviewer's edit) the verdict is stale and the item needs review again.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

from forge.benchmarks.review_spec import Media, ReviewSpec
from forge.checks.mcq import CORRECT
from forge.items.cells import as_list, as_object
from forge.items.fields import answer_letters, field_problem, lst
from forge.provenance.versioning import content_hash
from forge.review.labelconfig import BOX_LABEL, LETTERS

REVISED_FIELDS = ("question", "options", "option_types", "answer", "references", "media_paths", "labels")
BOX_ANSWER = re.compile(
    r"^\s*(.+?)\s*:\s*\[[^\]]*\]\s*$"
)  # "label: [top, left, height, width]" (forge/evals/extract.py)
BOX_TOLERANCE = 0.005  # a box may overhang the image by rounding only (normalised units)


def revision(item: dict[str, Any]) -> str:
    """The hash of what a reviewer judges (labels compared as parsed JSON)."""
    parts = {f: item.get(f) for f in REVISED_FIELDS}
    for f in ("options", "option_types", "references", "media_paths"):
        parts[f] = lst(parts[f])  # a missing list stays None: the revisions already given keep their hash
    parts["labels"] = as_object(parts["labels"])
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
    labels = {k: v for k, v in as_object(item.get("labels")).items() if k != "boxes"}
    lines = [f"{k}: {json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v}" for k, v in labels.items()]
    refs = as_list(item.get("references")) or []
    if refs:
        lines.append("references: " + " | ".join(str(r) for r in refs[:10]))
    return "\n".join(lines)[:4000] or "(none)"


def boxes_of(item: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        b for b in as_object(item.get("labels")).get("boxes") or [] if isinstance(b, dict) and b.get("box_norm_tlhw")
    ]


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


def human_key_of(benchmark: str, item_id: str, rev: str) -> str:
    """The blind task's key: opaque to the person answering (neither the item id nor the revision
    the review projects show), stable for one revision, so a re-push keeps the task."""
    return content_hash("human-task", benchmark, item_id, rev, length=16)


def human_key(item: dict[str, Any]) -> str:
    return human_key_of(str(item.get("benchmark") or ""), str(item["item_id"]), revision(item))


def task_data(item: dict[str, Any], spec: ReviewSpec, video: str | None, kind: str = "review") -> dict[str, Any]:
    if kind == "human":
        media = as_list(item.get("media_paths")) or []
        return blind_task_data(item, spec, human_key(item), media[0] if media else None, video)
    media = as_list(item.get("media_paths")) or []
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
        "options_text": options_text(item, spec.show_gold),
        "image": local_url(media[0]) if media else "",
        "answer_text": str(item.get("answer") or ""),
        "context_text": context_text(item),
        # a unit form repeats blocks over these (forge/review/units.py); Label Studio refuses a task
        # whose data lacks a key its form names, so an item's own task has them, empty
        "members": [],
        "parts": [],
    }
    if spec.media == Media.VIDEO:
        data["video"] = local_url(video) if video else ""
    return data


def blind_task_data(
    item: dict[str, Any], spec: ReviewSpec, key: str, image: str | None, video: str | None
) -> dict[str, Any]:
    """A human-baseline task: only what the model under test sees. Anyone in the tool can read a
    task's data (data manager, API), so it holds no gold, option types, category, split, task,
    item id, revision or labels; ``item_id`` and ``revision`` (the names the push matches on) both
    hold the opaque ``key``, and ``review_tasks`` maps the task back to its item. ``image`` /
    ``video``: data-dir paths whose names say nothing either (``forge.evals.human.blind_media``)."""
    data = {
        "item_id": key,
        "revision": key,
        "question": str(item.get("question") or ""),
        "options_text": options_text(item, show_gold=False),
        "image": local_url(image) if image else "",
        "instruction": "Pick the option letter(s)" if as_list(item.get("options")) else OPEN_INSTRUCTION[spec.boxes],
    }
    if spec.media == Media.VIDEO:
        data["video"] = local_url(video) if video else ""
    return data


OPEN_INSTRUCTION = {
    False: "Type your answer in the box",
    True: "Type your answer in the box, or draw a box on the image when the question asks for a region",
}


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


def _answer_as_letters(answer: str, options: list[str] | None) -> str:
    """A corrected answer as the recipes write it: letters sorted, comma-joined (``c, a`` → ``A,C``);
    typed as an option's text (``No``) → its letter (``B``)."""
    letters = answer_letters(answer) if options else None
    if letters is not None:
        return ",".join(LETTERS[i] for i in sorted(set(letters)))
    if not options:
        return answer
    by_text = {str(o).strip().casefold(): LETTERS[i] for i, o in enumerate(options) if i < len(LETTERS)}
    return by_text.get(answer.strip().casefold(), answer)


def follow_gold(old: dict[str, Any], new: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """Keep an edited item consistent with how the recipes build it: the options a new answer
    names become ``correct`` in ``option_types`` and each option that stops being correct takes
    the type of the one that replaced it (D→A: A correct, D gets A's old type, as a swap of the
    two); an option left over takes the item's most common other type. References that were the
    gold options' texts (VAGUE, Hummus Yes/No) become the new gold options' texts. Types that mark
    no ``correct`` option (Hummus positive / negative) describe the options and stay."""
    was, now = answer_letters(old.get("answer")), answer_letters(new.get("answer"))
    opts_old, opts_new = as_list(old.get("options")) or [], as_list(new.get("options")) or []
    if was is None or now is None or not opts_new or max(now) >= len(opts_new):
        return new, ""  # not a letter answer (or outside the options: field_problem says so)
    types = as_list(old.get("option_types"))
    if CORRECT in types and set(was) != set(now):
        types = list(types)
        gained = sorted(set(now) - set(was))
        lost = sorted(set(was) - set(now))
        for g, lo in zip(gained, lost, strict=False):
            types[lo], types[g] = types[g], CORRECT
        for g in gained[len(lost) :]:
            types[g] = CORRECT
        others = Counter(t for i, t in enumerate(types) if i not in now and t != CORRECT)
        for lo in lost[len(gained) :]:
            if not others:
                return None, (
                    f"option_types: option {LETTERS[lo]} stops being correct and the item has no other "
                    "option type to give it"
                )
            types[lo] = others.most_common(1)[0][0]
        new["option_types"] = types
    refs = as_list(old.get("references"))
    if refs and refs == [opts_old[i] for i in was if i < len(opts_old)]:
        new["references"] = [opts_new[i] for i in now]
    return new, ""


def apply_references(item: dict[str, Any], refs: Any) -> tuple[dict[str, Any] | None, str]:
    """The item with corrected references (``{index: text}``, or a whole list); its answer follows
    when it was the first reference (MAIA's open question)."""
    old = as_list(item.get("references")) or []
    if isinstance(refs, dict):
        new_refs = list(old)
        for k, text in refs.items():
            j = int(k)
            if j >= len(new_refs):
                return None, f"unknown_member: the item has no answer {j + 1}"
            new_refs[j] = str(text).strip()
    else:
        new_refs = [str(t).strip() for t in as_list(refs)]
    if any(not r for r in new_refs):
        return None, "empty_field: a corrected answer is empty"
    out = {**item, "references": new_refs}
    if old and str(item.get("answer")) == str(old[0]) and new_refs:
        out["answer"] = new_refs[0]
    return out, ""


def apply_edits(
    item: dict[str, Any], edits: dict[str, Any], data_dir: Path | None
) -> tuple[dict[str, Any] | None, str]:
    """The edited item, or (None, why it was refused). ``edits``: ``question`` / ``answer``
    (text; an option's text stands for its letter), ``options`` (list), ``boxes`` (index →
    [top, left, height, width] normalised). The gold's marks follow the answer (``follow_gold``).
    ``references`` (index → text, or a whole list: a pool's answers). The edited item must pass the gates' field contract (``forge.items.fields.field_problem``)
    and keep every box inside the image; otherwise the original stays."""
    new = dict(item)
    if "question" in edits:
        new["question"] = str(edits["question"]).strip()
        if not new["question"]:
            return None, "empty_question: the corrected question is empty"
    if "options" in edits:
        opts = [str(o).strip() for o in edits["options"]]
        types = as_list(item.get("option_types"))
        if types and len(types) != len(opts):
            return None, f"option_count: {len(opts)} options given, the item has {len(types)} (option types)"
        new["options"] = opts
    if "answer" in edits:
        new["answer"] = _answer_as_letters(str(edits["answer"]).strip(), as_list(new.get("options")))
    new, why = follow_gold(item, new)
    if new is None:
        return None, why
    if "references" in edits:  # one answer of a pool corrected in place (forge/review/units.py)
        new, why = apply_references(new, edits["references"])
        if new is None:
            return None, why
    if edits.get("boxes"):
        labels = as_object(item.get("labels"))
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
