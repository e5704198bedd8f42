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
* ``model_evaluation/test_set.json`` — the published test set (§6): a list of ``combi_id``,
  ``caption``, ``contest_number`` (int), ``is_met`` (Yes / No / WIDLII). Its 940 pairs keep the
  release split ``test`` and **its labels are the test gold**: the test set relabels 13 pairs of
  the dataset file (e.g. WIDLII → No, Discard → Yes), and the official evaluation reads
  ``is_met``. A pair the test set calls No makes only its Classification item (the other tasks
  take positive pairs only, as the official scripts skip ``is_met == "No"``); a pair it calls
  Yes / WIDLII whose dataset record carries no annotation (a Discard there) makes only its
  Classification item too (note ``test_positive_without_annotation``). When the release has a
  test set, a dataset pair it leaves out makes no item (note ``not_in_test_set``): the imported
  test split is exactly the test set;
* ``image_descriptions.csv`` — ``contest_number, image_description``: the human description
  of each cartoon used by the §6.3 ablation, stored as ``extra.image_description``.

The annotation is validated as human gold (``validate_annotation(..., human=True)``): only an
unknown verdict, a missing caption or a missing image rejects a record; everything else is
kept as released, and what the code could not place (figures outside the taxonomy, fields
outside the schema, unanchored spans, unusable boxes) is kept and reported.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image

from forge.releases.config import ReleaseInfo
from forge.releases.files import ReleaseFiles
from forge.releases.records import (
    IMAGE_SUFFIXES,
    ParsedRelease,
    file_label,
    item_columns,
    media_path,
    open_release,
    provenance,
    read_table,
    rows_of,
    table_files,
    text,
)

from .annotations import Annotation, validate_annotation
from .items import build_items


@cache
def columns() -> tuple[str, ...]:
    """The columns of ``hummus_items`` (its contract, read when a release is parsed, not at import)."""
    return tuple(item_columns("hummus_items", Path(__file__).resolve().parents[1] / "contracts"))


# Fields the items are built from; any other field of a record (``image_hl_desc``, ``complete``,
# ``text_hl``, ``solution`` on No / Discard pairs; annotation fields of a pair whose verdict
# makes no detail item) is kept in ``extra.release_fields`` and reported.
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
# Read but deliberately not used: constant image metadata (every record: image, image/jpeg, "1").
IGNORED_KEYS = frozenset(
    {"image_attributes.asset_type", "image_attributes.mime_type", "image_attributes.exif_rotation"}
)
POSITIVE = ("Yes", "WIDLII")
DETAIL_FIELDS = ("bboxes", "bbox_labels", "caption_hl", "conceptual_metaphor", "figures", "explanation")


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


def _read(info: ReleaseInfo, out: ParsedRelease) -> tuple[ReleaseFiles, dict, dict, dict]:
    """The dataset records (id -> (where, record)), the test set rows and the image descriptions."""
    files = open_release(info, out)
    dataset: dict[str, tuple[str, dict[str, Any]]] = {}
    test: dict[str, tuple[str, dict[str, Any]]] = {}
    descriptions: dict[str, str] = {}
    for f in table_files(files):
        try:
            data = read_table(f)
        except Exception as e:  # noqa: BLE001 - an unreadable file is a reject, the others still load
            out.reject(file_label(files, f), "unreadable_file", f"{type(e).__name__}: {e}")
            continue
        kind = _classify_file(data)
        for key, r in rows_of(data):
            where = f"{file_label(files, f)}#{key}"
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
            target = test if kind == "test_set" else dataset
            if cid in target:
                out.reject(where, "duplicate_id", f"pair {cid!r} appears twice")
            else:
                target[cid] = (where, r)
    return files, dataset, test, descriptions


def _record(cid: str, dataset: dict, test: dict, out: ParsedRelease) -> tuple[str, dict[str, Any], str | None]:
    """(where, the record to build from, why it makes Classification only) for one pair: a test
    pair takes the test set's caption, image and label over the dataset file's."""
    where, ds = dataset.get(cid, (None, {}))
    if cid not in test:
        return where, ds, None
    twhere, t = test[cid]
    verdict, ds_verdict = text(t.get("is_met")), text(ds.get("met_class"))
    r = {**ds, "caption": t.get("caption", ds.get("caption")), "contest_number": t.get("contest_number")}
    r["met_class"] = verdict
    if ds and ds_verdict != verdict:
        out.notes["test_label_differs_from_dataset"] += 1
        r["dataset_met_class"] = ds_verdict
    if verdict in POSITIVE and ds_verdict not in POSITIVE:
        out.notes["test_positive_without_annotation"] += 1
        return where or twhere, r, "no_annotation_in_dataset"
    return where or twhere, r, None


def _image(r: dict[str, Any], src: Path | None) -> tuple[int, int]:
    attrs = r.get("image_attributes") if isinstance(r.get("image_attributes"), dict) else {}
    try:
        return int(attrs["width"]), int(attrs["height"])
    except (KeyError, TypeError, ValueError):
        if src is None:
            return 0, 0
        with Image.open(src) as im:
            return im.size


def _items(info, cid, where, r, only_classification, src, descriptions, test, out) -> list[dict[str, Any]] | None:
    caption, verdict, contest = text(r.get("caption")), text(r.get("met_class")), _contest(r.get("contest_number"))
    width, height = _image(r, src)
    positive = verdict in POSITIVE and only_classification is None
    regions = _regions(r, width, height, out, where) if width and height and positive else []
    data = {
        "verdict": verdict,
        "metaphors": r.get("conceptual_metaphor") if positive else None,
        "regions": regions,
        "caption_highlighted": r.get("caption_hl") if positive else None,
        "explanation": r.get("explanation") if positive else None,
        "devices": _split_list(r.get("figures")) if positive else [],
    }
    ann, probs = validate_annotation(data, caption, width or 1, height or 1, human=True)
    if ann is None:
        out.reject(where, probs.primary(), probs.feedback().lstrip("- "))
        return None
    for kind, value in probs.kept:
        if kind == "figure":
            out.keep_unknown("figure", value)
        else:
            out.notes[kind] += 1
    if ann.verdict == "Discard":
        out.notes["discard_not_tested"] += 1  # the paper tests Yes / No / WIDLII only
        return []
    if test and cid not in test:
        # The published test set is the benchmark (§6): a pair it leaves out is not evaluated by the
        # official scripts, so it makes no item (it would otherwise be assigned a split, test included).
        out.notes["not_in_test_set"] += 1
        return []
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
        "detail_reject": only_classification,
    }
    kept = {k: r[k] for k in r if k not in KNOWN_FIELDS and k != "dataset_met_class"}
    kept |= {k: r[k] for k in DETAIL_FIELDS if k in r and not positive}  # annotation no item carries
    for k in r:
        if k not in KNOWN_FIELDS and k != "dataset_met_class":
            out.keep_unknown("field", k)
    underlined = [v for k, v in probs.kept if k == "underlined_span"]
    split = "test" if cid in test else (text(r.get("split")) or None)
    rows = []
    for it in build_items(row, _region_rows(ann, width, height)):
        extra = json.loads(it["extra"]) | {"combi_id": cid, "contest_number": contest, "origin": "imported"}
        if contest in descriptions:
            extra["image_description"] = descriptions[contest]
        if kept:
            extra["release_fields"] = kept
        if underlined:
            extra["underlined_spans"] = underlined
        if r.get("dataset_met_class"):
            extra["dataset_met_class"] = r["dataset_met_class"]  # the test set relabelled this pair
        if it["task"] == "naming":  # human names keep their own wording (Title Case)
            it["answer"] = ann.metaphors[0]
        if rel is None:
            it["media_paths"] = []
        rows.append({**it, **provenance(info, split), "extra": json.dumps(extra, ensure_ascii=False, default=str)})
    return rows


# The paper's counts (§4 and §6): 1,000 pairs: 331 Yes, 227 WIDLII, 382 No, 60 Discard; the
# test set holds the 940 Yes / No / WIDLII pairs.
PAPER = {"pairs": 1000, "Yes": 331, "WIDLII": 227, "No": 382, "Discard": 60, "test pairs": 940}


def _stats(dataset: dict, test: dict, items: pd.DataFrame) -> dict[str, tuple[Any, Any]]:
    verdicts = Counter(text(r.get("met_class")) for _, r in dataset.values())
    test_verdicts = Counter(text(r.get("is_met")) for _, r in test.values())
    cls = items[items["task"] == "classification"] if len(items) else items
    stats: dict[str, tuple[Any, Any]] = {"pairs (dataset file)": (len(dataset), PAPER["pairs"])}
    stats |= {f"{v} (dataset file)": (verdicts.get(v, 0), PAPER[v]) for v in ("Yes", "WIDLII", "No", "Discard")}
    stats |= {"test pairs": (len(test), PAPER["test pairs"])}
    stats |= {f"{v} (test set)": (test_verdicts.get(v, 0), None) for v in ("Yes", "WIDLII", "No")}
    stats |= {"test classification items": (int(cls["release_split"].eq("test").sum()) if len(cls) else 0, 940)}
    return stats


def parse_release(info: ReleaseInfo) -> ParsedRelease:
    out = ParsedRelease(items=pd.DataFrame(columns=list(columns())))
    files, dataset, test, descriptions = _read(info, out)
    images = files.index(IMAGE_SUFFIXES)
    require_media = bool(info.option("require_media", True))
    ids = list(dataset) + [c for c in test if c not in dataset]  # a test pair the dataset lacks still classifies
    out.records = len(ids)
    rows: list[dict[str, Any]] = []
    tested = 0
    for cid in ids:
        where, r, only_classification = _record(cid, dataset, test, out)
        if not text(r.get("caption")):
            out.reject(where, "missing_caption", f"pair {cid!r} has no caption")
            continue
        contest = _contest(r.get("contest_number"))
        src = next((images[k] for k in (f"{contest}.jpeg", f"{contest}.jpg", contest.lower()) if k in images), None)
        if src is None and require_media:
            out.reject(
                where, "media_missing", f"image of contest {contest!r} ({contest}.jpeg) not found under {info.path}"
            )
            continue
        new = _items(info, cid, where, r, only_classification, src, descriptions, test, out)
        rows += new or []
        tested += bool(new) and cid in test
    out.items = pd.DataFrame(rows, columns=list(columns()))
    out.notes["image_descriptions"] = len(descriptions)
    out.count("pairs", len(ids), out.items["extra"].map(lambda e: json.loads(e)["combi_id"]).nunique() if rows else 0)
    out.count("test pairs", len(test), tested)
    verdict = {
        c: text((test.get(c) or ("", {}))[1].get("is_met")) or text(dataset.get(c, ("", {}))[1].get("met_class"))
        for c in ids
    }
    detail = out.items[out.items["task"] != "classification"]["extra"] if rows else []
    out.count(
        "positive pairs (detail tasks)",
        sum(v in POSITIVE for v in verdict.values()),
        len({json.loads(e)["combi_id"] for e in detail}),
    )
    out.stats = _stats(dataset, test, out.items)
    return out
