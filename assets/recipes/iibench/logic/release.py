"""II-Bench's public release as benchmark items (importer; docs/releases.md).

``data/dev.json`` and ``data/test.json`` of the official repository: a list of image records,
each ``{local_path, questions: [{id, question, options (6 strings), correct_option?, answer?}],
meta_data: {image_type (a string in dev.json, a list of one or more in test.json), difficulty,
domain, emotion, rhetoric (list), explanation}}``; the image is the file at ``local_path``
relative to the release folder (``images/dev/dev-1.jpg``, ``images/test/test-1047.webp``: the
suffix varies, jpg / webp / png / jpeg), found by that path first, else by its file name. The file name gives the release split (``dev`` / ``test``). Options are
kept in the release's order (the gold letter is the release's); duplicated options (they occur
in dev.json) are kept and counted, the gates report them. Labels are normalised with the
recipe's taxonomy; a value outside it is kept in ``labels`` as written and reported (the
``category`` column, bound to the six domains, then says ``other``). ``labels.image_type`` is the
release's list where it gives one (test.json), like ``rhetoric``: both are the spec's
``multi_label`` keys, so a question counts under each of its types (Table 6).

A clone of the whole official repository also holds ``results/*.jsonl``: model replies written by
the official ``infer/infer.py`` in the same record shape, each question with ``prompt`` and
``response``. Such a file is skipped whole (note ``model_output_file_skipped``, its name under
``unknown.model_output_file``): only release data is offered.

The public test set withholds its answers (they are scored on EvalAI): a question without a
gold answer cannot be scored here and is a reject ``no_gold_answer`` (the item tables require
a gold letter); the dev set and any test file that carries ``answer`` / ``correct_option``
import fully.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from forge.checks.mcq import LETTERS, letter_index
from forge.releases.config import ReleaseInfo
from forge.releases.records import (
    IMAGE_SUFFIXES,
    ParsedRelease,
    embedded_image,
    file_label,
    item_columns,
    media_path,
    open_release,
    plain,
    provenance,
    read_table,
    rows_of,
    table_files,
    text,
)

from .taxonomy import normalise_label


@cache
def columns() -> tuple[str, ...]:
    """The columns of ``iibench_items`` (its contract, read when a release is parsed, not at import)."""
    return tuple(item_columns("iibench_items", Path(__file__).resolve().parents[1] / "contracts"))


# Every key of a released record is read (meta_data.explanation goes to extra.explanation).
IMAGE_KEYS = ("local_path", "questions", "meta_data")
QUESTION_KEYS = ("id", "question", "options", "correct_option", "answer")
META_KEYS = ("image_type", "difficulty", "domain", "emotion", "rhetoric", "explanation")
IGNORED_KEYS: frozenset[str] = frozenset()
# II-Bench Table 5 (App. A; per image): 1,434 questions on 1,222 images.
PAPER = {
    "questions": 1434,
    "images": 1222,
    "difficulty/easy": 708,
    "difficulty/middle": 385,
    "difficulty/hard": 129,
    "domain/life": 516,
    "domain/art": 70,
    "domain/society": 408,
    "domain/psychology": 127,
    "domain/environment": 44,
    "domain/other": 57,
    "emotion/positive": 169,
    "emotion/neutral": 702,
    "emotion/negative": 351,
}


def _split_of(name: str) -> str | None:
    stem = name.lower().rsplit(".", 1)[0]
    return next(
        (s for s in ("dev", "test", "val", "train") if stem == s or stem.endswith(f"_{s}") or stem.startswith(f"{s}")),
        None,
    )


def _model_outputs(data: Any) -> bool:
    """A file of model replies in the release's record shape (the official infer.py writes the
    records back with a ``response`` on every question): not data to import."""
    for _, rec in rows_of(data):
        qs = rec.get("questions") if isinstance(rec, dict) else None
        if isinstance(qs, list) and qs and isinstance(qs[0], dict):
            return "response" in qs[0]
    return False


def _label(axis: str, raw: Any, out: ParsedRelease) -> Any:
    """One label normalised with the taxonomy; a value outside it kept as written and reported."""
    norm = normalise_label(axis, raw) if isinstance(raw, str) else None
    if norm is None and raw not in (None, ""):
        out.keep_unknown(axis, raw)
    return norm if norm is not None else raw


def _labels(meta: dict[str, Any], out: ParsedRelease) -> dict[str, Any]:
    labels: dict[str, Any] = {}
    types = meta.get("image_type")
    if isinstance(types, list):
        # test.json lists one or more types per image and Table 6 counts a question under each
        # (its columns sum to 1,496 for 1,399 questions): the whole list is kept, in order
        kept: list[Any] = []
        for t in types:
            if (x := _label("image_type", t, out)) not in kept:
                kept.append(x)
        labels["image_type"] = kept
    else:
        labels["image_type"] = _label("image_type", types, out)  # dev.json: one type, a string
    for axis in ("domain", "emotion", "difficulty"):
        raw = meta.get(axis)
        labels[axis] = _label(axis, raw[0] if isinstance(raw, list) and raw else raw, out)
    rh = meta.get("rhetoric") or []
    rh = rh if isinstance(rh, list) else [x.strip() for x in str(rh).split(",")]
    labels["rhetoric"] = []
    for r in rh:
        norm = normalise_label("rhetoric", r)
        if norm is None:
            out.keep_unknown("rhetoric", r)
        labels["rhetoric"].append(norm or str(r))
    return labels


def _question(q: dict[str, Any], w: str, k: int, out: ParsedRelease) -> tuple[str, list[str], str] | None:
    """(release id, options, gold letter) of one released question, or a reject."""
    qid, question = text(q.get("id")), text(q.get("question"))
    options = [text(o) for o in q.get("options") or []]
    if not question or len(options) < 2 or any(not o for o in options):
        out.reject(w, "malformed_question", "a question needs its text and at least two non-empty options")
        return None
    ans = text(q.get("answer")).upper()
    if not ans and text(q.get("correct_option")) in options:
        ans = LETTERS[options.index(text(q.get("correct_option")))]
    if not ans:
        out.reject(w, "no_gold_answer", f"question {qid or k} has no answer (the release withholds it)")
        return None
    if len(ans) != 1 or letter_index(ans) >= len(options):
        out.reject(w, "bad_answer", f"answer {ans!r} is not one of the {len(options)} option letters")
        return None
    if text(q.get("correct_option")) and text(q.get("correct_option")) != options[letter_index(ans)]:
        out.notes["correct_option_differs_from_answer_letter"] += 1
    if len({o.casefold() for o in options}) < len(options):
        out.notes["duplicated_options"] += 1
    return qid, options, ans


def _nested(row: dict[str, Any]) -> dict[str, Any]:
    """A flat question row (the Hugging Face hub's layout as lmms-eval reads it: ``id, question,
    option1..option6, answer``, the image embedded in ``image``, labels as columns) as an image
    record of the repository's layout."""
    row = plain(row)
    options = row.get("options") or [row[f"option{k}"] for k in range(1, 7) if row.get(f"option{k}") is not None]
    q = {k: row[k] for k in ("id", "question", "correct_option", "answer") if k in row} | {"options": options}
    meta = (
        row.get("meta_data") if isinstance(row.get("meta_data"), dict) else {k: row[k] for k in META_KEYS if k in row}
    )
    path = text(row.get("local_path") or row.get("image_path"))
    return {"local_path": path, "questions": [q], "meta_data": meta, "_image": row.get("image")}


def _stats(records: list[dict[str, Any]], items: pd.DataFrame) -> dict[str, tuple[Any, Any]]:
    n_q = sum(len(r.get("questions") or []) for r in records)
    stats: dict[str, tuple[Any, Any]] = {
        "questions": (n_q, PAPER["questions"]),
        "images (local_path)": (len({text(r.get("local_path")) for r in records}), PAPER["images"]),
        "imported items": (len(items), None),
    }
    for axis in ("difficulty", "domain", "emotion"):
        counts = Counter(
            normalise_label(axis, (r.get("meta_data") or {}).get(axis)) or "?" for r in records if isinstance(r, dict)
        )
        for key, paper in PAPER.items():
            if key.startswith(f"{axis}/"):
                stats[key] = (counts.get(key.split("/", 1)[1], 0), paper)
    return stats


def parse_release(info: ReleaseInfo) -> ParsedRelease:
    out = ParsedRelease(items=pd.DataFrame(columns=list(columns())))
    files = open_release(info, out)
    images = files.index(IMAGE_SUFFIXES)
    require_media = bool(info.option("require_media", True))
    rows, seen, records = [], set(), []
    for f in table_files(files):
        try:
            data = read_table(f)
        except Exception as e:  # noqa: BLE001 - an unreadable file is a reject, the others still load
            out.reject(file_label(files, f), "unreadable_file", f"{type(e).__name__}: {e}")
            continue
        if _model_outputs(data):
            # results/<model>_<split>_<mode>.jsonl of a whole clone: the official infer.py's replies
            # (each question gains ``prompt`` and ``response``), not release data
            out.notes["model_output_file_skipped"] += 1
            out.keep_unknown("model_output_file", file_label(files, f))
            continue
        split = _split_of(f.name)
        for key, img in rows_of(data):
            where = f"{file_label(files, f)}[{key}]"
            if isinstance(img, dict) and "questions" not in img and "question" in img:
                img = _nested(img)
            if not isinstance(img, dict) or not isinstance(img.get("questions"), list):
                out.reject(where, "unparsable_record", "an image record needs a questions list")
                continue
            records.append(img)
            out.records += len(img["questions"])
            path = text(img.get("local_path"))
            src = (images.get(path.lower()) or images.get(path.rsplit("/", 1)[-1].lower())) if path else None
            if src is None and (blob := embedded_image(img.get("_image"))) is not None:
                qid = text((img["questions"] or [{}])[0].get("id")) or f"{split}-{key}"
                rel = media_path(info, Path(f"{qid}{blob[1]}"))
                out.media[rel], path = blob[0], path or rel
                src = rel  # embedded: the bytes are placed as the item's image
            if src is None and require_media:
                out.reject(where, "media_missing", f"image {path!r} not found under {info.path}")
                continue
            meta = img.get("meta_data") if isinstance(img.get("meta_data"), dict) else {}
            labels = _labels(meta, out)
            rel = src if isinstance(src, str) else media_path(info, src) if src is not None else None
            if rel and not isinstance(src, str):
                out.media[rel] = src
            for k, q in enumerate(img["questions"]):
                w = f"{where}.questions[{k}]"
                got = _question(q if isinstance(q, dict) else {}, w, k, out)
                if got is None:
                    continue
                qid, options, ans = got
                iid = "iib_rel_" + hashlib.sha1(f"{info.name}\0{qid or w}".encode()).hexdigest()[:12]
                if iid in seen:
                    out.reject(w, "duplicate_id", f"question id {qid!r} appears twice")
                    continue
                seen.add(iid)
                domain = labels.get("domain")
                explanation = meta.get("explanation")
                rows.append(
                    {
                        "item_id": iid,
                        "benchmark": "iibench",
                        "task": "mcq",
                        "category": domain if normalise_label("domain", domain or "") else "other",
                        "question": text(q.get("question")),
                        "options": options,
                        "option_types": [
                            "correct" if i == letter_index(ans) else "distractor" for i in range(len(options))
                        ],
                        "answer": ans,
                        "references": None,
                        "media_paths": [rel] if rel else [],
                        "unit_id": f"{info.name}:{path}",
                        "source_item_id": f"{info.name}:{path}",
                        "labels": json.dumps(labels, ensure_ascii=False),
                        "extra": json.dumps(
                            {
                                "explanation": explanation
                                if isinstance(explanation, (dict, list))
                                else text(explanation),
                                "release_id": qid,
                                "origin": "imported",
                                "local_path": path,
                            },
                            ensure_ascii=False,
                        ),
                        **provenance(info, split),
                    }
                )
    out.items = pd.DataFrame(rows, columns=list(columns()))
    out.count("questions", out.records, len(out.items))
    out.count("images", len(records), out.items["unit_id"].nunique() if rows else 0)
    out.stats = _stats(records, out.items)
    return out
