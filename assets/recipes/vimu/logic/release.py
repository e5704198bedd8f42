"""ViMU's release as benchmark items (importer; docs/releases.md).

Layout, as the dataset card announces it (the files are gated during review, so field names
are read tolerantly): ``videos/<video_id>.mp4`` and ``metadata/*.jsonl`` with one file per
task — ``open_ended_qa`` (OE), ``evidence_grounding`` (EG), ``rhetoric_mechanism_mcq`` (RM),
``social_value_signal_mcq`` (SV); a ``task`` field in a row wins over the file name.

Per row: ``video_id`` (or ``video`` / ``clip_id``), ``question``, ``answer`` (OE: text; the
multi-select tasks: letters ``"A,C"``, a list of letters, or a list of option texts),
``options`` (a list, or a letter → text object; absent: the taxonomy's five macro options),
``reference_points`` / ``key_points`` (OE) and any label fields (kept in ``labels``). The
videos become 16 uniform frames (the evaluation's ViMU setting), like the recipe's clips.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from forge.releases.config import ReleaseInfo
from forge.releases.records import (
    VIDEO_SUFFIXES,
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

from .items import MCQ_TASKS, TASK_KIND
from .taxonomy import load_taxonomy


@cache
def columns() -> tuple[str, ...]:
    """The columns of ``vimu_items`` (its contract, read when a release is parsed, not at import)."""
    return tuple(item_columns("vimu_items", Path(__file__).resolve().parents[1] / "contracts"))


FILE_TASKS = (("open_ended", "OE"), ("evidence", "EG"), ("rhetoric", "RM"), ("social", "SV"))
TASK_ALIASES = {
    "oe": "OE",
    "open_ended": "OE",
    "eg": "EG",
    "evidence_grounding": "EG",
    "rm": "RM",
    "rhetoric_mechanism": "RM",
    "sv": "SV",
    "social_value_signal": "SV",
    "social_value": "SV",
}
KNOWN = {
    "video_id",
    "video",
    "clip_id",
    "question",
    "answer",
    "answers",
    "options",
    "reference_points",
    "key_points",
    "task",
    "id",
    "question_id",
    "split",
}
IGNORED_KEYS: frozenset[str] = frozenset()  # every other field is kept in ``labels`` and reported
# ViMU §3: 2,352 questions on 588 videos, one question per task and video (588 each).
PAPER = {"videos": 588, "questions": 2352, "OE": 588, "EG": 588, "RM": 588, "SV": 588}
_LETTERS = re.compile(r"^[A-Z](\s*,\s*[A-Z])*$")


def _task(name: str, row: dict[str, Any]) -> str | None:
    if text(row.get("task")):
        return TASK_ALIASES.get(text(row["task"]).lower().replace(" ", "_"))
    stem = name.lower()
    return next((t for key, t in FILE_TASKS if key in stem), None)


def _options(row: dict[str, Any], task: str) -> list[str]:
    opts = row.get("options")
    if isinstance(opts, dict):
        return [text(opts[k]) for k in sorted(opts)]
    if isinstance(opts, list) and opts:
        return [text(o) for o in opts]
    return [m.name for m in load_taxonomy().axis(MCQ_TASKS[task]).macros]


def _gold_letters(raw: Any, options: list[str]) -> list[str] | None:
    letters = "ABCDEFGHIJ"[: len(options)]
    vals = raw if isinstance(raw, list) else [raw]
    out = []
    for v in vals:
        s = text(v)
        if _LETTERS.match(s.upper()) and len(s) <= 2 * len(options):
            out += [x.strip() for x in s.upper().split(",")]
        elif s in options:
            out.append(letters[options.index(s)])
        else:
            return None
    return out if out and all(x in letters for x in out) else None


def parse_release(info: ReleaseInfo) -> ParsedRelease:
    out = ParsedRelease(items=pd.DataFrame(columns=list(columns())))
    files = open_release(info, out)
    videos = files.index(VIDEO_SUFFIXES)
    require_media = bool(info.option("require_media", True))
    rows, seen = [], set()
    for f in table_files(files):
        try:
            data = read_table(f)
        except Exception as e:  # noqa: BLE001 - an unreadable file is a reject, the others still load
            out.reject(file_label(files, f), "unreadable_file", f"{type(e).__name__}: {e}")
            continue
        for key, r in rows_of(data):
            where = f"{file_label(files, f)}[{key}]"
            if not isinstance(r, dict) or "__unparsable__" in r:
                out.reject(where, "unparsable_record", str((r or {}).get("__unparsable__", "not a record")))
                continue
            out.records += 1
            task = _task(f.name, r)
            if task is None:
                out.reject(where, "unknown_task", "neither the file name nor a task field names OE / EG / RM / SV")
                continue
            video = text(r.get("video_id") or r.get("video") or r.get("clip_id"))
            question, raw_answer = text(r.get("question")), r.get("answer", r.get("answers"))
            if not video or not question or raw_answer in (None, "", []):
                out.reject(where, "missing_field", "video_id, question and answer are required")
                continue
            for k in r:
                if k not in KNOWN:
                    out.keep_unknown("field", k)
            src = videos.get(video.lower()) or videos.get(f"{video}.mp4".lower())
            if src is None and require_media:
                out.reject(where, "media_missing", f"video {video!r} not found under {info.path}")
                continue
            rel = media_path(info, src) if src is not None else None
            if rel:
                out.media[rel] = src
            iid = "vimu_rel_" + hashlib.sha1(f"{info.name}\0{video}\0{task}\0{question}".encode()).hexdigest()[:12]
            if iid in seen:
                out.reject(where, "duplicate_record", f"{task} question for {video!r} appears twice")
                continue
            seen.add(iid)
            labels = {k: v for k, v in r.items() if k not in KNOWN}
            common = {
                "item_id": iid,
                "benchmark": "vimu",
                "category": task,
                "task": TASK_KIND[task],
                "question": question,
                "media_paths": [rel] if rel else [],
                "unit_id": f"{info.name}:{video}",
                "source_item_id": f"{info.name}:{video}",
                "question_id": f"{info.name}:{video}",
                "labels": json.dumps(labels, ensure_ascii=False, default=str),
                **provenance(info, text(r.get("split")) or None),
            }
            if task == "OE":
                points = r.get("reference_points") or r.get("key_points") or []
                rows.append(
                    {
                        **common,
                        "options": None,
                        "option_types": None,
                        "answer": text(raw_answer),
                        "references": [text(raw_answer)],
                        "extra": json.dumps(
                            {
                                "reference_points": [text(p) for p in points],
                                "origin": "imported",
                                "release_id": text(r.get("id") or r.get("question_id")) or None,
                            },
                            ensure_ascii=False,
                        ),
                    }
                )
                continue
            options = _options(r, task)
            gold = _gold_letters(raw_answer, options)
            if gold is None:
                out.reject(
                    where,
                    "bad_answer",
                    f"answer {raw_answer!r} is not letters or option texts of {len(options)} options",
                )
                continue
            letters = "ABCDEFGHIJ"[: len(options)]
            rows.append(
                {
                    **common,
                    "options": options,
                    "option_types": ["correct" if x in gold else "distractor" for x in letters],
                    "answer": ",".join(sorted(set(gold))),
                    "references": None,
                    "extra": json.dumps(
                        {
                            "gold_names": [options[letters.index(x)] for x in sorted(set(gold))],
                            "origin": "imported",
                            "release_id": text(r.get("id") or r.get("question_id")) or None,
                        },
                        ensure_ascii=False,
                    ),
                }
            )
    out.items = pd.DataFrame(rows, columns=list(columns()))
    out.count("questions", out.records, len(out.items))
    per_task = out.items["category"].value_counts() if rows else {}
    out.stats = {
        "videos": (out.items["unit_id"].nunique() if rows else 0, PAPER["videos"]),
        "questions": (len(out.items), PAPER["questions"]),
    } | {f"questions ({t})": (int(per_task.get(t, 0)), PAPER[t]) for t in ("OE", "EG", "RM", "SV")}
    return out
