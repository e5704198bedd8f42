"""MAIA's public release as benchmark items (importer; docs/releases.md).

Forms accepted, in one file or spread over several (JSON, JSONL, CSV, Parquet):

* **question rows** (the release's open-ended part, HF config ``gen``): ``id``, ``video_id``,
  ``file_name``, ``question_category``, ``question``, ``answer1`` … ``answer8`` (or an
  ``answers`` list) → one ``open_ended`` item, the 8 answers as references;
* **statement pairs** (HF config ``mc``): ``id`` (the question's), ``pool_pos`` (1..8),
  ``answer1`` / ``answer2`` (the two statements) and ``target`` (which one is true; 0/1 or
  1/2, detected per file, ``target_base`` option when a file cannot tell) → one
  ``statement_verification`` item per pair, options in the release's order;
* **caption / foil** rows (``caption`` = true statement, ``foil`` = false one);
* **nested JSON**: records under keys (video → category → record), with ``answers`` and
  ``statements`` lists (``{true, false}`` or ``{TS, FS}`` pairs); keys fill a record's missing
  ``video_id`` / ``question_category``.

Categories are MAIA's Italian names with an optional slot suffix (``SpazialeParziale_A``,
``ImplicitoTot_B``, ``OutofScope``), English spellings ("Partial Spatial") or ours
(``spatial_partial``); a name outside the 12 is kept as written and reported, never dropped.
Human text is taken as it is: the generation checks (yes/no, audio words) are not applied.
Statement-verification items carry the recipe's question (``SV_QUESTION``); the release option
``sv_question`` sets another wording (e.g. Italian).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd

from forge.checks.mcq import letter, shuffle_options
from forge.recipes.maia.items import ITEM_COLUMNS, SV_QUESTION
from forge.recipes.maia.questions import stable_id
from forge.recipes.maia.taxonomy import categories
from forge.releases.config import ReleaseInfo
from forge.releases.records import (
    VIDEO_SUFFIXES,
    ParsedRelease,
    file_label,
    media_index,
    media_path,
    provenance,
    read_table,
    table_files,
    text,
)

PROVENANCE_COLUMNS = ["origin", "release", "release_version", "licence", "release_split"]
COLUMNS = ITEM_COLUMNS + PROVENANCE_COLUMNS

# Compact spelling (letters only, lower case) → category. Italian names as released, English
# names as the paper writes them, and ours.
_ALIASES = {
    "causale": "causal",
    "causaleesplicita": "causal",
    "causaleimplicita": "causal",
    "causal": "causal",
    "explicitcausal": "causal",
    "implicitcausal": "causal",
    "controfattuale": "counterfactual",
    "counterfactual": "counterfactual",
    "implicitoparziale": "implicit_partial",
    "partialimplicit": "implicit_partial",
    "implicitpartial": "implicit_partial",
    "implicitotot": "implicit_total",
    "implicitototale": "implicit_total",
    "totalimplicit": "implicit_total",
    "implicittotal": "implicit_total",
    "incertezza": "uncertainty",
    "uncertainty": "uncertainty",
    "outofscope": "out_of_scope",
    "fuoriambito": "out_of_scope",
    "pianificazione": "planning",
    "planning": "planning",
    "sentiment": "sentiment",
    "sentimento": "sentiment",
    "spazialeparziale": "spatial_partial",
    "partialspatial": "spatial_partial",
    "spatialpartial": "spatial_partial",
    "spazialetotale": "spatial_total",
    "spazialetot": "spatial_total",
    "totalspatial": "spatial_total",
    "spatialtotal": "spatial_total",
    "temporaledurata": "temporal_duration",
    "durata": "temporal_duration",
    "duration": "temporal_duration",
    "temporalduration": "temporal_duration",
    "durationtemporal": "temporal_duration",
    "temporaleparziale": "temporal_partial",
    "partialtemporal": "temporal_partial",
    "temporalpartial": "temporal_partial",
}
_SLOT = re.compile(r"^(.*?)[\s_\-.]+([A-Za-z]|\d)$")
_ANSWER_COL = re.compile(r"^answer[_ ]?(\d+)$", re.IGNORECASE)


# The release's class-label order (a Parquet / ``datasets`` ClassLabel stores the index).
CLASS_LABELS = (
    "CausaleEsplicita",
    "Controfattuale",
    "ImplicitoParziale",
    "ImplicitoTot",
    "Incertezza",
    "OutofScope",
    "Pianificazione",
    "Sentiment",
    "SpazialeParziale",
    "SpazialeTotale",
    "TemporaleDurata",
    "TemporaleParziale",
)


def parse_category(raw: Any) -> tuple[str, str, bool]:
    """(category, slot, known) for a released category name.

    ``SpazialeParziale_A`` → (spatial_partial, a, True); ``OutofScope`` → (out_of_scope, '', True);
    a class-label index (``8``) → its name's category; an unknown name comes back as written
    with known = False."""
    s = text(raw)
    if s.isdigit() and int(s) < len(CLASS_LABELS):
        s = CLASS_LABELS[int(s)]
    slot = ""
    m = _SLOT.match(s)
    if m and _compact(m.group(1)) in _ALIASES:
        s, slot = m.group(1), m.group(2).lower()
    cat = _ALIASES.get(_compact(s))
    return (cat, slot, True) if cat else (text(raw), "", False)


# Names that say which causal type a record is (App. A.2 fn. 10). The release's one causal class
# label, ``CausaleEsplicita``, names the whole merged category (App. A.3 fn. 11), so it says nothing.
_CAUSAL_TYPE_NAMES = {"explicitcausal": "explicit", "implicitcausal": "implicit", "causaleimplicita": "implicit"}


def causal_type_of_record(cat_raw: Any, rec: dict[str, Any]) -> str | None:
    """explicit / implicit from a ``causal_type`` field, or a category name that says it; else None."""
    field = _compact(text(rec.get("causal_type")))
    field = {"esplicito": "explicit", "esplicita": "explicit", "implicito": "implicit", "implicita": "implicit"}.get(
        field, field
    )
    if field in ("explicit", "implicit"):
        return field
    name = _compact(_SLOT.sub(r"\1", text(cat_raw)))
    return _CAUSAL_TYPE_NAMES.get(name)


def _compact(s: str) -> str:
    return re.sub(r"[^a-z]", "", s.lower())


def _answers(rec: dict[str, Any]) -> list[str]:
    if isinstance(rec.get("answers"), (list, tuple)):
        return [text(a) for a in rec["answers"]]
    cols = sorted(((int(m.group(1)), k) for k in rec if (m := _ANSWER_COL.match(str(k)))), key=lambda t: t[0])
    return [text(rec[k]) for _, k in cols]


def _pairs(rec: dict[str, Any]) -> list[tuple[str, str]]:
    """(true, false) statement pairs carried inside a nested question record."""
    out = []
    for st in rec.get("statements") or rec.get("statement_pairs") or []:
        if isinstance(st, dict):
            t = text(st.get("true") or st.get("TS") or st.get("true_statement") or st.get("caption"))
            f = text(st.get("false") or st.get("FS") or st.get("false_statement") or st.get("foil"))
            out.append((t, f))
        elif isinstance(st, (list, tuple)) and len(st) == 2:
            out.append((text(st[0]), text(st[1])))
        else:
            out.append(("", ""))
    ts, fs = rec.get("true_statements"), rec.get("false_statements")
    if isinstance(ts, list) and isinstance(fs, list):
        out += [(text(a), text(b)) for a, b in zip(ts, fs)] + [("", "")] * abs(len(ts) - len(fs))
    return out


_CONTEXT_KEYS = ("video_id", "video", "file_name", "question_category", "category")


def _flatten(data: Any, where: str, context: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Records of any nesting, each with the keys it sits under as missing context."""
    if isinstance(data, list):
        return [r for k, v in enumerate(data) for r in _flatten(v, f"{where}[{k}]", context)]
    if not isinstance(data, dict):
        return [(where, {"__unparsable__": f"not a record: {type(data).__name__}"})]
    if any(k in data for k in ("question", "pool_pos", "foil", "answers", "answer1", "statements", "__unparsable__")):
        return [(where, {**context, **data})]
    out = []
    for k, v in data.items():
        ctx = dict(context)
        for ck in _CONTEXT_KEYS:
            if ck in data and not isinstance(data[ck], (dict, list)):
                ctx[ck] = data[ck]
        if isinstance(v, (dict, list)):
            if "video_id" not in ctx and "video" not in ctx:
                ctx["video_id"] = k
            elif "question_category" not in ctx and "category" not in ctx:
                ctx["question_category"] = k
            out += _flatten(v, f"{where}/{k}", ctx)
    return out


def _target_base(rows: list[dict[str, Any]], default: int) -> int:
    vals = {text(r.get("target")) for r in rows if "pool_pos" in r or "target" in r}
    if "2" in vals:
        return 1
    if "0" in vals:
        return 0
    return default


def parse_release(info: ReleaseInfo) -> ParsedRelease:
    """Items of one MAIA release (see the module docstring for the forms)."""
    out = ParsedRelease(items=pd.DataFrame(columns=COLUMNS))
    videos = media_index(info.path, VIDEO_SUFFIXES)
    require_media = bool(info.option("require_media", True))
    sv_question = str(info.option("sv_question", SV_QUESTION))  # the recipe's (English) wording unless set
    records: list[tuple[str, dict[str, Any], int]] = []
    for f in table_files(info.path):
        try:
            flat = _flatten(read_table(f), file_label(info.path, f), {})
        except Exception as e:  # noqa: BLE001 - an unreadable file is a reject, the others still load
            out.reject(file_label(info.path, f), "unreadable_file", f"{type(e).__name__}: {e}")
            continue
        base = _target_base([r for _, r in flat], int(info.option("target_base", 0)))
        records += [(w, r, base) for w, r in flat]
    out.records = len(records)

    questions: dict[str, dict[str, Any]] = {}  # release question key → question row
    pair_rows: list[tuple[str, dict[str, Any], str, str, int]] = []  # where, context, ts, fs, pool_pos
    for where, r, base in records:
        if "__unparsable__" in r:
            out.reject(where, "unparsable_record", str(r["__unparsable__"]))
            continue
        video = text(r.get("video_id") or r.get("video"))
        cat_raw = r.get("question_category") or r.get("category")
        if not video:
            out.reject(where, "missing_video_id", "the record names no video (video_id / video)")
            continue
        if not text(cat_raw):
            out.reject(where, "missing_category", "the record has no question_category")
            continue
        if "pool_pos" in r or ("target" in r and "question" not in r):
            a, b = text(r.get("answer1")), text(r.get("answer2"))
            try:
                t = int(float(text(r.get("target")))) - base
            except ValueError:
                out.reject(where, "bad_target", f"target {r.get('target')!r} is not 0/1 (or 1/2)")
                continue
            if t not in (0, 1):
                out.reject(where, "bad_target", f"target {r.get('target')!r} is outside the two statements")
                continue
            ts, fs = (a, b) if t == 0 else (b, a)
            pair_rows.append((where, r, ts, fs, int(float(text(r.get("pool_pos")) or 0))))
            continue
        if "foil" in r and "question" not in r:
            pair_rows.append(
                (where, r, text(r.get("caption")), text(r.get("foil")), int(float(text(r.get("pool_pos")) or 0)))
            )
            continue
        q = text(r.get("question"))
        if not q:
            out.reject(where, "missing_question", "a question record without question text")
            continue
        answers = _answers(r)
        if not any(answers):
            out.reject(where, "missing_answers", "a question without its answer pool")
            continue
        if any(not a for a in answers):
            out.notes["empty_answer_dropped"] += sum(1 for a in answers if not a)
        key = text(r.get("id")) or f"{video}/{text(cat_raw)}"
        if key in questions:
            out.reject(where, "duplicate_question_id", f"question id {key!r} appears twice")
            continue
        questions[key] = {
            "where": where,
            "rec": r,
            "video": video,
            "question": q,
            "answers": [a for a in answers if a],
            "cat_raw": text(cat_raw),
        }
        for k, (ts, fs) in enumerate(_pairs(r), start=1):
            pair_rows.append((where, {**r, "id": key}, ts, fs, k))

    by_cat_video = defaultdict(list)
    for key, q in questions.items():
        by_cat_video[(q["video"], q["cat_raw"])].append(key)
    rows: list[dict[str, Any]] = []

    def common(where: str, r: dict[str, Any], video: str, cat_raw: str) -> dict[str, Any] | None:
        cat, slot, known = parse_category(cat_raw)
        if not known:
            out.keep_unknown("category", cat_raw)
        fname = Path(text(r.get("file_name")) or video).name
        src = videos.get(fname.lower()) or videos.get(Path(fname).stem.lower()) or videos.get(video.lower())
        media: list[str] = []
        if src is not None:
            rel = media_path(info, src)
            out.media[rel] = src
            media = [rel]
        elif require_media:
            out.reject(where, "media_missing", f"video {fname!r} is not in the release folder {info.path}")
            return None
        else:
            out.notes["media_missing_kept"] += 1
        macro = categories()[cat].macro if known else cat
        return {
            "benchmark": "maia",
            "category": cat,
            "media_paths": media,
            "unit_id": f"{info.name}:{video}",
            "source_item_id": f"{info.name}:{video}",
            **provenance(info, text(r.get("split")) or None),
            "_labels": {
                "category": cat,
                "macro_category": macro,
                "release_category": cat_raw,
                "slot": slot,
                "known_category": known,
                **({"causal_type": ct} if cat == "causal" and (ct := causal_type_of_record(cat_raw, r)) else {}),
            },
        }

    for key, q in questions.items():
        c = common(q["where"], q["rec"], q["video"], q["cat_raw"])
        if c is None:
            continue
        labels = c.pop("_labels") | {"question_id": key}
        refs = q["answers"]
        rows.append(
            {
                **c,
                "item_id": f"maia_rel_oe_{stable_id(info.name, key)}",
                "task": "open_ended",
                "question": q["question"],
                "options": None,
                "option_types": None,
                "answer": refs[0],
                "references": refs,
                "labels": json.dumps(labels, ensure_ascii=False),
                "extra": json.dumps(
                    {"origin": "imported", "n_references": len(refs), "release_id": key, "language": info.language},
                    ensure_ascii=False,
                ),
            }
        )

    seen: set[str] = set()
    for where, r, ts, fs, pos in pair_rows:
        if not ts or not fs:
            out.reject(where, "missing_statement", "a statement pair lacks its true or its false statement")
            continue
        if ts.strip().casefold() == fs.strip().casefold():
            out.reject(where, "identical_statements", f"the true and the false statement are the same: {ts!r}")
            continue
        qkey = text(r.get("id"))
        video = text(r.get("video_id") or r.get("video"))
        cat_raw = text(r.get("question_category") or r.get("category"))
        q = questions.get(qkey)
        if q is not None and (q["video"], q["cat_raw"]) != (video, cat_raw):
            q, qkey = None, ""  # an id that is a row number, not the question's: link by video + category
        if q is None and len(by_cat_video.get((video, cat_raw), [])) == 1:
            q = questions[by_cat_video[(video, cat_raw)][0]]
            qkey = by_cat_video[(video, cat_raw)][0]
        if q is None:
            out.notes["statement_pair_without_question"] += 1
        iid = f"maia_rel_sv_{stable_id(info.name, qkey or where, pos, ts, fs)}"
        if iid in seen:
            out.reject(where, "duplicate_statement_pair", f"the same pair appears twice for question {qkey!r}")
            continue
        seen.add(iid)
        c = common(where, r, video, cat_raw)
        if c is None:
            continue
        if text(r.get("answer1")):  # the release's own order (HF ``mc``: answer1 / answer2)
            t_index = 0 if text(r.get("answer1")) == ts else 1
        else:  # true / false pairs without an order: seeded, like the recipe
            t_index = shuffle_options([ts, fs], ["correct", "foil"], seed=("maia", iid)).correct_index
        options = [ts, fs] if t_index == 0 else [fs, ts]
        labels = c.pop("_labels") | {"question_id": qkey or None, "pool_index": pos}
        rows.append(
            {
                **c,
                "item_id": iid,
                "task": "statement_verification",
                "question": sv_question,
                "options": options,
                "option_types": ["correct", "foil"] if t_index == 0 else ["foil", "correct"],
                "answer": letter(t_index),
                "references": None,
                "labels": json.dumps(labels, ensure_ascii=False),
                "extra": json.dumps(
                    {
                        "origin": "imported",
                        "maia_question": q["question"] if q else None,
                        "release_id": qkey or None,
                        "language": info.language,
                    },
                    ensure_ascii=False,
                ),
            }
        )
    out.items = pd.DataFrame(rows, columns=COLUMNS)
    return out
