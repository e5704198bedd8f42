"""MAIA's public release as benchmark items (importer; docs/releases.md).

Forms accepted, in one file or spread over several (JSON, JSONL, CSV, Parquet):

* **the official repository's JSON** (``dataset/data_20%.json``, the published 20 % release;
  docs/releases.md has the full layout): a list of videos ``{video: "video<N>", link,
  question_categories_A: [...], question_categories_B: [...]}``, each list holding one record
  per category ``{category: "<Name>_<slot>", question, answer: [8 answers], true_statement:
  [8], false_statement: [8]}`` (singular key names, list values; the i-th true / false
  statements are the pair of the i-th answer); the video file is ``videos/<N>.mp4``;
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
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from forge.checks.mcq import letter, shuffle_options
from forge.releases.config import ReleaseInfo
from forge.releases.files import ReleaseFiles
from forge.releases.records import (
    VIDEO_SUFFIXES,
    ParsedRelease,
    file_label,
    item_columns,
    media_path,
    open_release,
    provenance,
    read_table,
    table_files,
    text,
    verbatim,
)

from .items import SV_QUESTION
from .questions import stable_id
from .taxonomy import categories


@cache
def columns() -> tuple[str, ...]:
    """The columns of ``maia_items`` (its contract, read when a release is parsed, not at import)."""
    return tuple(item_columns("maia_items", Path(__file__).resolve().parents[1] / "contracts"))


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
        return [verbatim(a) for a in rec["answers"]]
    cols = sorted(((int(m.group(1)), k) for k in rec if (m := _ANSWER_COL.match(str(k)))), key=lambda t: t[0])
    return [verbatim(rec[k]) for _, k in cols]


def _pairs(rec: dict[str, Any]) -> list[tuple[str, str]]:
    """(true, false) statement pairs carried inside a nested question record."""
    out = []
    for st in rec.get("statements") or rec.get("statement_pairs") or []:
        if isinstance(st, dict):
            t = verbatim(st.get("true") or st.get("TS") or st.get("true_statement") or st.get("caption"))
            f = verbatim(st.get("false") or st.get("FS") or st.get("false_statement") or st.get("foil"))
            out.append((t, f))
        elif isinstance(st, (list, tuple)) and len(st) == 2:
            out.append((verbatim(st[0]), verbatim(st[1])))
        else:
            out.append(("", ""))
    ts, fs = rec.get("true_statements"), rec.get("false_statements")
    if isinstance(ts, list) and isinstance(fs, list):
        out += [(verbatim(a), verbatim(b)) for a, b in zip(ts, fs)] + [("", "")] * abs(len(ts) - len(fs))
    return out


_CONTEXT_KEYS = ("video_id", "video", "file_name", "question_category", "category")
_SLOT_LIST = re.compile(r"^question_categories_([A-Za-z0-9]+)$")
# Keys of the official JSON this importer reads (video level, then per question record); none is ignored.
OFFICIAL_VIDEO_KEYS = ("video", "link")
OFFICIAL_RECORD_KEYS = ("category", "question", "answer", "true_statement", "false_statement")
IGNORED_KEYS: frozenset[str] = frozenset()


def _is_official(data: Any) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(v, dict) and any(_SLOT_LIST.match(str(k)) for k in v) for v in data)
    )


def _official(data: list[dict[str, Any]], where: str, out: ParsedRelease) -> list[tuple[str, dict[str, Any]]]:
    """Question records of the official JSON, each with its video, link, slot list and the
    (true, false) pairs zipped by position."""
    recs = []
    for i, v in enumerate(data):
        for key in sorted(k for k in v if _SLOT_LIST.match(str(k))):
            slot = _SLOT_LIST.match(key).group(1)
            for j, r in enumerate(v[key] if isinstance(v[key], list) else []):
                w = f"{where}[{i}].{key}[{j}]"
                if not isinstance(r, dict):
                    recs.append((w, {"__unparsable__": f"not a record: {type(r).__name__}"}))
                    continue
                ts, fs = r.get("true_statement"), r.get("false_statement")
                ts, fs = (ts if isinstance(ts, list) else []), (fs if isinstance(fs, list) else [])
                pairs = [(verbatim(a), verbatim(b)) for a, b in zip(ts, fs)] + [("", "")] * abs(len(ts) - len(fs))
                cat = text(r.get("category"))
                if cat and not cat.endswith(f"_{slot}"):
                    out.notes["category_slot_differs_from_list"] += 1
                answers = r.get("answer")
                recs.append(
                    (
                        w,
                        {
                            "video_id": text(v.get("video")),
                            "link": text(v.get("link")),
                            "question_category": cat,
                            "question": r.get("question"),
                            "answers": answers if isinstance(answers, list) else [answers],
                            "statements": pairs,
                        },
                    )
                )
    return recs


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


def _video_keys(fname: str, video: str) -> list[str]:
    """Names a record's video may have in the release: its file name, the id, and the id's
    number (the official JSON names ``video12``, the file is ``videos/12.mp4``)."""
    keys = [fname.lower(), Path(fname).stem.lower(), video.lower()]
    num = re.sub(r"^video[\s_-]*", "", video, flags=re.IGNORECASE)
    return [*keys, num.lower()] if num != video else keys


def _target_base(rows: list[dict[str, Any]], default: int) -> int:
    vals = {text(r.get("target")) for r in rows if "pool_pos" in r or "target" in r}
    if "2" in vals:
        return 1
    if "0" in vals:
        return 0
    return default


def _read(info: ReleaseInfo, files: ReleaseFiles, out: ParsedRelease) -> list[tuple[str, dict[str, Any], int]]:
    """(where, record, target base) for every record of every released table."""
    records: list[tuple[str, dict[str, Any], int]] = []
    for f in table_files(files):
        try:
            data = read_table(f)
            label = file_label(files, f)
            flat = _official(data, label, out) if _is_official(data) else _flatten(data, label, {})
        except Exception as e:  # noqa: BLE001 - an unreadable file is a reject, the others still load
            out.reject(file_label(files, f), "unreadable_file", f"{type(e).__name__}: {e}")
            continue
        base = _target_base([r for _, r in flat], int(info.option("target_base", 0)))
        records += [(w, r, base) for w, r in flat]
    return records


def _pair_row(where: str, r: dict[str, Any], base: int, out: ParsedRelease) -> tuple | None:
    """A statement-pair row (HF ``mc`` or caption / foil) as (where, record, true, false, pool position)."""
    if "pool_pos" in r or ("target" in r and "question" not in r):
        a, b = verbatim(r.get("answer1")), verbatim(r.get("answer2"))
        try:
            t = int(float(text(r.get("target")))) - base
        except ValueError:
            out.reject(where, "bad_target", f"target {r.get('target')!r} is not 0/1 (or 1/2)")
            return None
        if t not in (0, 1):
            out.reject(where, "bad_target", f"target {r.get('target')!r} is outside the two statements")
            return None
        ts, fs = (a, b) if t == 0 else (b, a)
        return where, r, ts, fs, int(float(text(r.get("pool_pos")) or 0))
    return where, r, verbatim(r.get("caption")), verbatim(r.get("foil")), int(float(text(r.get("pool_pos")) or 0))


def _sort(records: list[tuple[str, dict[str, Any], int]], out: ParsedRelease) -> tuple[dict, list]:
    """Question records (key -> question) and statement pairs (where, record, true, false, position)."""
    questions: dict[str, dict[str, Any]] = {}
    pairs: list[tuple[str, dict[str, Any], str, str, int]] = []
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
        if "pool_pos" in r or ("target" in r and "question" not in r) or ("foil" in r and "question" not in r):
            if (row := _pair_row(where, r, base, out)) is not None:
                pairs.append(row)
            continue
        q = verbatim(r.get("question"))
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
        pairs += [
            (f"{where}.statements[{k - 1}]", {**r, "id": key}, ts, fs, k) for k, (ts, fs) in enumerate(_pairs(r), 1)
        ]
    return questions, pairs


class _Common:
    """The columns every item of one record shares (media, category, provenance), or a reject."""

    def __init__(self, info: ReleaseInfo, files: ReleaseFiles, out: ParsedRelease):
        self.info, self.out = info, out
        self.videos = files.index(VIDEO_SUFFIXES)
        self.require_media = bool(info.option("require_media", True))

    def __call__(self, where: str, r: dict[str, Any], video: str, cat_raw: str) -> dict[str, Any] | None:
        info, out = self.info, self.out
        cat, slot, known = parse_category(cat_raw)
        if not known:
            out.keep_unknown("category", cat_raw)
        fname = Path(text(r.get("file_name")) or video).name
        src = next((self.videos[k] for k in _video_keys(fname, video) if k in self.videos), None)
        media: list[str] = []
        if src is not None:
            rel = media_path(info, src)
            out.media[rel] = src
            media = [rel]
        elif self.require_media:
            names = " / ".join(dict.fromkeys(_video_keys(fname, video)))
            out.reject(where, "media_missing", f"video {video!r} ({names} + .mp4 ...) is not under {info.path}")
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
            "_extra": {"origin": "imported", "language": info.language}
            | ({"video_url": text(r.get("link"))} if text(r.get("link")) else {}),
        }


def _open_ended(questions: dict[str, dict[str, Any]], common: _Common) -> list[dict[str, Any]]:
    rows = []
    for key, q in questions.items():
        c = common(q["where"], q["rec"], q["video"], q["cat_raw"])
        if c is None:
            continue
        labels, extra = c.pop("_labels") | {"question_id": key}, c.pop("_extra")
        refs = q["answers"]
        rows.append(
            {
                **c,
                "item_id": f"maia_rel_oe_{stable_id(common.info.name, key)}",
                "task": "open_ended",
                "question": q["question"],
                "options": None,
                "option_types": None,
                "answer": refs[0],
                "references": refs,
                "labels": json.dumps(labels, ensure_ascii=False),
                "extra": json.dumps(extra | {"n_references": len(refs), "release_id": key}, ensure_ascii=False),
            }
        )
    return rows


def _statements(questions: dict, pairs: list, common: _Common, sv_question: str) -> list[dict[str, Any]]:
    out, info = common.out, common.info
    by_cat_video = defaultdict(list)
    for key, q in questions.items():
        by_cat_video[(q["video"], q["cat_raw"])].append(key)
    rows, seen = [], set()
    for where, r, ts, fs, pos in pairs:
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
            qkey = by_cat_video[(video, cat_raw)][0]
            q = questions[qkey]
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
            t_index = 0 if verbatim(r.get("answer1")) == ts else 1
        else:  # true / false lists without an order (the official JSON): seeded, like the recipe
            t_index = shuffle_options([ts, fs], ["correct", "foil"], seed=("maia", iid)).correct_index
        labels, extra = c.pop("_labels") | {"question_id": qkey or None, "pool_index": pos}, c.pop("_extra")
        rows.append(
            {
                **c,
                "item_id": iid,
                "task": "statement_verification",
                "question": sv_question,
                "options": [ts, fs] if t_index == 0 else [fs, ts],
                "option_types": ["correct", "foil"] if t_index == 0 else ["foil", "correct"],
                "answer": letter(t_index),
                "references": None,
                "labels": json.dumps(labels, ensure_ascii=False),
                "extra": json.dumps(
                    extra | {"maia_question": q["question"] if q else None, "release_id": qkey or None},
                    ensure_ascii=False,
                ),
            }
        )
    return rows


# MAIA's full benchmark (§3, Fig. 1; README of the official repository): 100 videos, 12 categories,
# 2 questions per category and video, 8 answers per question, one true / false pair per answer.
PAPER = {"videos": 100, "categories": 12, "questions": 2400, "answers": 19200, "statement pairs": 19200}


def _stats(items: pd.DataFrame, questions: dict, pairs: list) -> dict[str, tuple[Any, Any]]:
    oe = items[items["task"] == "open_ended"] if len(items) else items
    videos = {q["video"] for q in questions.values()}
    per = len(questions) / (len(videos) * 12) if videos else None
    return {
        "videos": (len(videos), PAPER["videos"]),
        "categories": (int(oe["category"].nunique()) if len(oe) else 0, PAPER["categories"]),
        "questions": (len(questions), PAPER["questions"]),
        "questions per video and category": (per, 2.0),
        "answers": (sum(len(q["answers"]) for q in questions.values()), PAPER["answers"]),
        "answers per question": (
            sum(len(q["answers"]) for q in questions.values()) / len(questions) if questions else None,
            8.0,
        ),
        "statement pairs": (len(pairs), PAPER["statement pairs"]),
    }


def parse_release(info: ReleaseInfo) -> ParsedRelease:
    """Items of one MAIA release (see the module docstring for the forms)."""
    out = ParsedRelease(items=pd.DataFrame(columns=list(columns())))
    files = open_release(info, out)
    records = _read(info, files, out)
    out.records = len(records)
    questions, pairs = _sort(records, out)
    common = _Common(info, files, out)
    sv_question = str(info.option("sv_question", SV_QUESTION))  # the recipe's (English) wording unless set
    rows = _open_ended(questions, common) + _statements(questions, pairs, common, sv_question)
    out.items = pd.DataFrame(rows, columns=list(columns()))
    tasks = out.items["task"].value_counts()
    videos = {q["video"] for q in questions.values()} | {
        text(r.get("video_id") or r.get("video")) for _, r, *_ in pairs
    }
    out.count("videos", len(videos), out.items["unit_id"].nunique())
    out.count("questions", sum(1 for _, r, _ in records if "question" in r), int(tasks.get("open_ended", 0)))
    offered_pairs = sum(len(_pairs(r)) if "question" in r else 1 for _, r, _ in records if "__unparsable__" not in r)
    out.count("statement pairs", offered_pairs, int(tasks.get("statement_verification", 0)))
    out.stats = _stats(out.items, questions, pairs)
    return out
