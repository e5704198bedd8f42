"""Hummus's public release as benchmark items (importer; docs/releases.md).

Files, found anywhere under the release folder:

* ``hummus_dataset.json`` — every image-caption pair: an object keyed by pair id
  (``nyc-combi-<n>``; a list of records with ``combi_id`` is read too) with ``caption``,
  ``contest_number`` (the cartoon: ``images/<contest_number>.jpeg``), ``met_class``
  (Yes / No / WIDLII / Discard) and, for Yes / WIDLII, ``image_attributes`` (width, height),
  ``bboxes`` (pixel ``top, left, height, width``), ``bbox_labels`` (``;``-separated, one per
  box), ``caption_hl`` (spans in ``<i>`` or ``<u>`` tags), ``conceptual_metaphor``
  (Title Case ``X Is Y`` / ``X Are Y``, ``;``-separated, sub-metaphors in parentheses),
  ``figures`` (``;``-separated) and ``explanation``;
* ``test_set.json`` — the published test set: a list of ``combi_id``, ``caption``,
  ``contest_number``, ``is_met``; its items keep the release split ``test``;
* ``image_descriptions.csv`` — ``contest_number, image_description``: the human description
  of each cartoon used by the §6.3 ablation, stored as ``extra.image_description``.

The annotation is validated as human gold (``validate_annotation(..., human=True)``): only an
unknown verdict, a missing caption or a missing image rejects a record; everything else is
kept as released, and what the code could not place (figures outside the taxonomy, fields
outside the schema, unanchored spans, unusable boxes) is kept and reported.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from PIL import Image

from forge.recipes.hummus.annotations import Annotation, validate_annotation
from forge.recipes.hummus.items import build_items
from forge.releases.config import ReleaseInfo
from forge.releases.records import (
    IMAGE_SUFFIXES,
    ParsedRelease,
    file_label,
    media_index,
    media_path,
    provenance,
    read_table,
    rows_of,
    table_files,
    text,
)

ITEM_COLUMNS = [
    "item_id",
    "benchmark",
    "task",
    "category",
    "question",
    "options",
    "option_types",
    "answer",
    "references",
    "media_paths",
    "unit_id",
    "source_item_id",
    "source",
    "channel",
    "batch",
    "labels",
    "backend",
    "model",
    "prompt_hash",
    "extra",
    "origin",
    "release",
    "release_version",
    "licence",
    "release_split",
]
KNOWN_FIELDS = {
    "combi_id",
    "caption",
    "contest_number",
    "met_class",
    "is_met",
    "image_attributes",
    "bboxes",
    "bbox_labels",
    "caption_hl",
    "conceptual_metaphor",
    "figures",
    "explanation",
}


def _split_list(v: Any) -> list[str]:
    if isinstance(v, list):
        return [text(x) for x in v if text(x)]
    return [x.strip() for x in text(v).split(";") if x.strip()]


def _contest(v: Any) -> str:
    s = text(v)
    try:
        return str(int(float(s)))
    except ValueError:
        return s


def _classify_file(data: Any) -> str:
    rows = [r for _, r in rows_of(data) if isinstance(r, dict)]
    if rows and all("image_description" in r for r in rows[:5]):
        return "descriptions"
    if (
        isinstance(data, list)
        and rows
        and any("is_met" in r for r in rows[:5])
        and not any("met_class" in r for r in rows[:5])
    ):
        return "test_set"
    return "dataset"


def _regions(rec: dict[str, Any], width: int, height: int, out: ParsedRelease, where: str) -> list[dict[str, Any]]:
    """Pixel boxes → the normalised ``[top, left, height, width]`` regions of the validator."""
    boxes = rec.get("bboxes") or []
    labels = _split_list(rec.get("bbox_labels"))
    if boxes and labels and len(labels) not in (1, len(boxes)):
        out.notes["box_label_count_mismatch"] += 1
    regions = []
    for k, b in enumerate(boxes if isinstance(boxes, list) else []):
        label = labels[k] if k < len(labels) else (labels[0] if len(labels) == 1 else "")
        try:
            top, left, h, w = (float(b[key]) for key in ("top", "left", "height", "width"))
            box = [top / height, left / width, h / height, w / width]
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            box = b
        # a human box a few pixels past the border is clipped, not lost
        if isinstance(box, list) and len(box) == 4 and all(isinstance(x, float) for x in box):
            top, left = max(box[0], 0.0), max(box[1], 0.0)
            box = [top, left, min(box[2], 1.0 - top), min(box[3], 1.0 - left)]
        regions.append({"label": label or "object", "box": box})
        if not label:
            out.notes["box_without_label"] += 1
    return regions


def _region_rows(ann: Annotation, width: int, height: int) -> list[dict[str, Any]]:
    return [
        {
            "label": r.label,
            "region_index": k,
            "box_norm_top": r.top,
            "box_norm_left": r.left,
            "box_norm_height": r.height,
            "box_norm_width": r.width,
            "box_px_x0": r.x0,
            "box_px_y0": r.y0,
            "box_px_x1": r.x1,
            "box_px_y1": r.y1,
        }
        for k, r in enumerate(ann.regions)
    ]


def parse_release(info: ReleaseInfo) -> ParsedRelease:
    out = ParsedRelease(items=pd.DataFrame(columns=ITEM_COLUMNS))
    images = media_index(info.path, IMAGE_SUFFIXES)
    require_media = bool(info.option("require_media", True))
    dataset: dict[str, tuple[str, dict[str, Any]]] = {}
    test: dict[str, dict[str, Any]] = {}
    descriptions: dict[str, str] = {}
    for f in table_files(info.path):
        try:
            data = read_table(f)
        except Exception as e:  # noqa: BLE001 - an unreadable file is a reject, the others still load
            out.reject(file_label(info.path, f), "unreadable_file", f"{type(e).__name__}: {e}")
            continue
        kind = _classify_file(data)
        for key, r in rows_of(data):
            where = f"{file_label(info.path, f)}#{key}"
            if not isinstance(r, dict):
                out.reject(where, "unparsable_record", f"not a record: {type(r).__name__}")
                continue
            if kind == "descriptions":
                if _contest(r.get("contest_number")) and text(r.get("image_description")):
                    descriptions[_contest(r["contest_number"])] = text(r["image_description"])
                continue
            cid = text(r.get("combi_id")) or (key if isinstance(data, dict) else "")
            if not cid:
                out.reject(where, "missing_id", "a pair without combi_id")
                continue
            if kind == "test_set":
                test[cid] = r
            elif cid in dataset:
                out.reject(where, "duplicate_id", f"pair {cid!r} appears twice")
            else:
                dataset[cid] = (where, r)
    for cid, r in test.items():  # a test pair the dataset file lacks is still a classification item
        if cid not in dataset:
            dataset[cid] = (f"test_set#{cid}", {**r, "met_class": r.get("is_met")})
    out.records = len(dataset)
    rows: list[dict[str, Any]] = []
    for cid, (where, r) in dataset.items():
        caption = text(r.get("caption"))
        verdict = text(r.get("met_class") or r.get("is_met"))
        contest = _contest(r.get("contest_number"))
        if not caption:
            out.reject(where, "missing_caption", f"pair {cid!r} has no caption")
            continue
        if cid in test and text(test[cid].get("is_met")) and text(test[cid].get("is_met")) != verdict:
            out.notes["test_label_differs_from_dataset"] += 1
        for k in r:
            if k not in KNOWN_FIELDS:
                out.keep_unknown("field", k)
        src = images.get(f"{contest}.jpeg") or images.get(f"{contest}.jpg") or images.get(contest.lower())
        if src is None and require_media:
            out.reject(where, "media_missing", f"image of contest {contest!r} not found under {info.path}")
            continue
        attrs = r.get("image_attributes") if isinstance(r.get("image_attributes"), dict) else {}
        try:
            width, height = int(attrs["width"]), int(attrs["height"])
        except (KeyError, TypeError, ValueError):
            if src is None:
                width = height = 0
            else:
                with Image.open(src) as im:
                    width, height = im.size
        regions = _regions(r, width, height, out, where) if width and height else []
        data = {
            "verdict": verdict,
            "metaphors": r.get("conceptual_metaphor"),
            "regions": regions,
            "caption_highlighted": r.get("caption_hl"),
            "explanation": r.get("explanation"),
            "devices": _split_list(r.get("figures")),
        }
        ann, probs = validate_annotation(data, caption, width or 1, height or 1, human=True)
        if ann is None:
            out.reject(where, probs.primary(), probs.feedback().lstrip("- "))
            continue
        underlined = [v for k, v in probs.kept if k == "underlined_span"]
        for kind, value in probs.kept:
            if kind == "figure":
                out.keep_unknown("figure", value)
            else:
                out.notes[kind] += 1
        if ann.verdict == "Discard":
            out.notes["discard_not_tested"] += 1  # the paper tests Yes / No / WIDLII only
            continue
        rel = media_path(info, src) if src is not None else None
        if rel:
            out.media[rel] = src
        row = {
            "verdict": ann.verdict,
            "metaphors": ann.metaphors,
            "devices": ann.devices,
            "caption_origin": "release",
            "width": width or None,
            "height": height or None,
            "path": rel,
            "frame_id": f"{info.name}:{contest}",
            "item_id": f"{info.name}:{contest}",
            "source": f"release:{info.name}",
            "channel": None,
            "batch": f"release:{info.name}",
            "backend": "human",
            "model": None,
            "prompt_hash": None,
            "annotation_id": f"{info.name}:{cid}",
            "caption": caption,
            "caption_highlighted": ann.highlight.highlighted if ann.highlight else None,
            "explanation": ann.explanation or None,
        }
        split = "test" if cid in test else (text(r.get("split")) or None)
        extra_fields = {k: r[k] for k in r if k not in KNOWN_FIELDS}
        for it in build_items(row, _region_rows(ann, width, height)):
            extra = json.loads(it["extra"]) | {"combi_id": cid, "contest_number": contest, "origin": "imported"}
            if contest in descriptions:
                extra["image_description"] = descriptions[contest]
            if extra_fields:
                extra["release_fields"] = extra_fields
            if underlined:
                extra["underlined_spans"] = underlined
            if it["task"] == "naming":  # human names keep their own wording (Title Case)
                it["answer"] = ann.metaphors[0]
            if rel is None:
                it["media_paths"] = []
            rows.append({**it, **provenance(info, split), "extra": json.dumps(extra, ensure_ascii=False, default=str)})
    out.items = pd.DataFrame(rows, columns=ITEM_COLUMNS)
    out.notes["image_descriptions"] = len(descriptions)
    return out
