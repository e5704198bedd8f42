"""Label Studio annotations → verdict rows, merged with the verdicts already recorded.

One row per annotation (``verdict_id`` = ``<project id>:<annotation id>@<created>``,
``forge/people/verdict_ids.py``): re-reading the tool replaces a row, never adds a second one, and a
replaced database's new annotation that reuses an old one's ids adds its own row beside it. Rows whose task was deleted in the tool stay (nothing
is lost) and are marked stale (``task_deleted``); the item goes back into the queue.

Every annotation is read exactly or refused (``verdict = refused``, ``refusal`` says why for
people), never guessed; its reviewer is whoever last changed it, and one changed by someone
other than its author is flagged (``flag``). Neither counts (``forge/review/gate.py``).
Dagster-free.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from forge.benchmarks.review_spec import FieldLimits, MemberAnswers
from forge.checks import text_rules
from forge.items.cells import as_list
from forge.people.read import who
from forge.people.refusal import control_problem, skipped
from forge.people.verdict_ids import annotation_key as annotation_key  # the readers' name for it
from forge.people.verdict_ids import annotation_ref, created_stamp, is_legacy, member_part, verdict_key
from forge.review.labelconfig import FIELD_TAGS, VERDICTS
from forge.review.units import parse_unit, refused_unit

VERDICT_COLUMNS = [
    "verdict_id",
    "benchmark",
    "item_id",
    "revision",
    "member",
    "project_kind",
    "project_id",
    "task_id",
    "reviewer",
    "author",
    "flag",
    "verdict",
    "reason",
    "note",
    "refusal",
    "edits",
    "edit_status",
    "edit_note",
    "new_revision",
    "edit_blind",
    "edit_nli",
    "seconds",
    "created_at",
    "updated_at",
    "stale",
    "stale_reason",
    "polled_at",
]


# Every control the review and adjudication forms have (``forge/review/labelconfig.py``), with the
# result type Label Studio gives it and the object it names (``to_name``); anything else in a
# result is refused, never ignored.
REASON_NOTE = "reason_note"  # optional free-text note with a reject (a TextArea in the form)
CONTROLS = {
    "verdict": ("choices", "question"),
    "reason": ("choices", "question"),
    REASON_NOTE: ("textarea", "question"),
    **dict.fromkeys(FIELD_TAGS.values(), ("textarea", "question")),
    "box": ("rectanglelabels", "image"),
}
FIELD_LIMIT = {"question": "question", "answer": "answer"}  # edited field → its ``FieldLimits`` attribute


SKIPPED = skipped("verdict") + "; the item still needs one"


class Refused(ValueError):
    """An annotation that cannot be read as one verdict; the message says why, for people."""


def _entries(result: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [r for r in result if r.get("from_name") == name]


def _choices(result: list[dict[str, Any]], name: str) -> list[str]:
    return [str(c) for r in _entries(result, name) for c in (r.get("value") or {}).get("choices") or []]


def _text(result: list[dict[str, Any]], name: str) -> str | None:
    """The text typed into one TextArea; None when the field was left out. A field present but
    blank is a value too (``""``): the caller refuses it."""
    entries = _entries(result, name)
    if not entries:
        return None
    if len(entries) > 1:
        raise Refused(f"several_values: {name} was given {len(entries)} times")
    text = (entries[0].get("value") or {}).get("text")
    parts = text if isinstance(text, list) else [text]
    return "\n".join(str(t) for t in parts if t is not None).strip()


def _check_controls(result: Any) -> list[dict[str, Any]]:
    if not isinstance(result, list) or not result:
        raise Refused("empty_result: the annotation holds no answer")
    why = control_problem(result, CONTROLS, "the review form")
    if why:
        raise Refused(why)
    return result


def _one_choice(result: list[dict[str, Any]], name: str, allowed: tuple[str, ...], what: str) -> str:
    picked = _choices(result, name)
    if not picked:
        raise Refused(f"no_{what}: no {what} chosen (one of {', '.join(allowed)})")
    if len(picked) > 1:
        raise Refused(f"several_{what}s: {', '.join(picked)} chosen where one is allowed")
    if picked[0] not in allowed:
        raise Refused(f"unknown_{what}: {picked[0]!r} is not one of {', '.join(allowed)}")
    return picked[0]


def readable(value: str, what: str, limit: int) -> str:
    """``value`` as text people can read (``forge.checks.text_rules``: NFC; refused when empty,
    invisible, holding a control or bidi character, or markup) within ``limit`` characters."""
    if len(value) > limit:  # before the rules walk a megabyte
        raise Refused(f"too_long: {what} has {len(value)} characters (limit {limit})")
    try:
        value = text_rules.clean(value, what)
    except text_rules.TextRefused as exc:
        hint = " (leave the field out to keep it)" if exc.code == "empty_field" else ""
        raise Refused(f"{exc}{hint}") from exc
    if len(value) > limit:  # NFC may compose a text that was longer
        raise Refused(f"too_long: {what} has {len(value)} characters (limit {limit})")
    return value


def _sized(field: str, value: str, limit: int) -> str:
    return readable(value, f"the corrected {field}", limit)


def _corrections(result: list[dict[str, Any]], limits: FieldLimits) -> dict[str, Any]:
    edits: dict[str, Any] = {}
    for field in ("question", "answer"):
        t = _text(result, FIELD_TAGS[field])
        if t is not None:
            edits[field] = _sized(field, t, getattr(limits, FIELD_LIMIT[field]))
    opts = _text(result, FIELD_TAGS["options"])
    if opts is not None:
        lines = [line for line in _sized("options", opts, limits.options_chars()).splitlines() if line.strip()]
        # blank lines between options are layout, not options; each option is a text of its own
        if len(lines) > limits.options:
            raise Refused(f"too_many_options: {len(lines)} options given (limit {limits.options})")
        edits["options"] = [readable(line, f"corrected option {i + 1}", limits.option) for i, line in enumerate(lines)]
    return edits


def moved_boxes(
    result: list[dict[str, Any]], original: dict[str, list[float]], tol: float = 0.002
) -> dict[str, list[float]]:
    """index → [top, left, height, width] (normalised) of boxes that differ from the item's.
    Regions keep the prediction's id (``b<i>``) when a reviewer moves them; a region with another
    id was drawn anew, which the review does not take (refused, so it never vanishes unsaid)."""
    out = {}
    for r in result:
        if r.get("from_name") != "box" or r.get("type") != "rectanglelabels":
            continue
        rid = str(r.get("id") or "")
        if not rid.startswith("b") or not rid[1:].isdigit():
            raise Refused("box_drawn: a new box was drawn; review moves the item's own boxes, it adds none")
        v = r.get("value") or {}
        try:
            tlhw = [float(v.get(k, 0)) / 100 for k in ("y", "x", "height", "width")]
        except (TypeError, ValueError) as exc:
            raise Refused(f"bad_box: box {rid} has a non-numeric position ({exc})") from exc
        old = original.get(rid[1:])
        if old is None or any(abs(a - b) > tol for a, b in zip(tlhw, old, strict=True)):
            out[rid[1:]] = [round(x, 4) for x in tlhw]
    return out


def parse_annotation(
    result: list[dict[str, Any]],
    boxes: dict[str, list[float]],
    reasons: tuple[str, ...],
    limits: FieldLimits | None = None,
) -> dict[str, Any]:
    """(verdict, reason, note, edits, refused) of one annotation's result: read exactly, or refused
    with a reason for people (``verdict = refused``), never guessed. A moved box makes an accept an
    edit (the box sits on the image, outside the verdict's choice); typed corrections with an
    accept, an edit without a correction, a reject without a reason from the fixed list, a blank or
    oversized field, an unknown control or choice, or several choices where one is allowed is refused."""
    try:
        return _parse(result, boxes, reasons, limits or FieldLimits())
    except Refused as exc:
        return {"verdict": "refused", "reason": None, "note": None, "edits": {}, "refused": str(exc)}


def _parse(
    result: list[dict[str, Any]], boxes: dict[str, list[float]], reasons: tuple[str, ...], limits: FieldLimits
) -> dict[str, Any]:
    result = _check_controls(result)
    verdict = _one_choice(result, "verdict", VERDICTS, "verdict")
    note = _text(result, REASON_NOTE)
    note = readable(note, "the reason note", limits.reason_note) if note else None  # a blank note is none
    out = {"verdict": verdict, "reason": None, "note": note or None, "edits": {}, "refused": None}
    if verdict == "reject":
        return {**out, "reason": _one_choice(result, "reason", reasons, "reason")}
    edits = _corrections(result, limits)
    if verdict == "accept" and edits:  # typed corrections contradict "keep as it is"
        fields = ", ".join(edits)
        raise Refused(
            f"accept_with_corrections: accept was chosen with corrections ({fields}): choose edit to apply them"
        )
    moved = moved_boxes(result, boxes)
    if moved:
        edits["boxes"] = moved
    if edits:
        return {**out, "verdict": "edit", "edits": edits}
    if verdict == "edit":
        raise Refused(
            "edit_without_changes: 'edit' was chosen but nothing was corrected (choose accept, or correct a field)"
        )
    return out


def _seconds(v: Any) -> float | None:
    """Label Studio's lead time; a value no clock gives (negative, not a number) is unknown."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) and f >= 0 else None


def _ts(v: Any) -> pd.Timestamp | None:
    return pd.Timestamp(v).tz_convert("UTC") if v else None


def verdict_rows(
    benchmark: str,
    kind: str,
    project_id: int,
    tasks: list[dict[str, Any]],
    users: dict[int, str],
    reasons: tuple[str, ...],
    limits: FieldLimits | None = None,
    member_answers: MemberAnswers | str = MemberAnswers.UNIT_COVERS,
) -> list[dict[str, Any]]:
    """Every annotation of a project's tasks as a verdict row: read exactly, refused with its reason
    (``verdict = refused``; a skip too), or flagged (changed by another). ``member_answers``: whether
    a unit task's own verdict stands for its unmarked members (``ReviewSpec.member_answers``)."""
    now = pd.Timestamp(datetime.now(UTC))
    rows = []
    for t in tasks:
        data = t.get("data") or {}
        boxes = {r["id"][1:]: _box_of(r) for p in t.get("predictions") or [] for r in _results(p) if _is_box(r)}
        for a in t.get("annotations") or []:
            reviewer, author, flag = who(a, users)
            if data.get("members"):  # a unit task: one row per member item (forge/review/units.py)
                if a.get("was_cancelled"):
                    parsed_all = refused_unit(data, SKIPPED)
                else:
                    try:
                        result = a.get("result") if isinstance(a.get("result"), list) else []
                        moved: dict[str, list[float]] | str = moved_boxes(result, boxes)
                    except Refused as exc:
                        moved = str(exc)
                    parsed_all = parse_unit(a.get("result") or [], data, reasons, limits, moved, member_answers)
                for p in parsed_all:
                    row = _row(benchmark, kind, project_id, t, a, p, reviewer, author, flag, now)
                    # the task's time is shared by its members: the minutes figure counts it once
                    secs = row["seconds"] / len(parsed_all) if row["seconds"] is not None else None
                    rows.append({**row, "verdict_id": f"{row['verdict_id']}:{p['item_id']}", "seconds": secs})
                continue
            if a.get("was_cancelled"):  # a skip is no verdict: recorded, refused, back to its reviewer
                parsed = {"verdict": "refused", "reason": None, "note": None, "edits": {}, "refused": SKIPPED}
            else:
                parsed = parse_annotation(a.get("result") or [], boxes, reasons, limits)
            parsed["member"] = None
            parsed.update(item_id=str(data.get("item_id")), revision=str(data.get("revision")))
            rows.append(_row(benchmark, kind, project_id, t, a, parsed, reviewer, author, flag, now))
    return rows


def _row(
    benchmark: str,
    kind: str,
    project_id: int,
    t: dict[str, Any],
    a: dict[str, Any],
    parsed: dict[str, Any],
    reviewer: str,
    author: str | None,
    flag: str | None,
    now: pd.Timestamp,
) -> dict[str, Any]:
    return {
        "verdict_id": verdict_key(project_id, a),
        "benchmark": benchmark,
        "item_id": str(parsed["item_id"]),
        "revision": str(parsed["revision"]),
        "member": parsed["member"],
        "project_kind": kind,
        "project_id": int(project_id),
        "task_id": int(t["id"]),
        "reviewer": reviewer,
        "author": author,
        "flag": flag,
        "verdict": parsed["verdict"],
        "reason": parsed["reason"],
        "note": parsed["note"],
        "refusal": parsed["refused"],
        "edits": json.dumps(parsed["edits"], ensure_ascii=False) if parsed["edits"] else None,
        "edit_status": None,
        "edit_note": None,
        "new_revision": None,
        "seconds": _seconds(a.get("lead_time")),
        "created_at": _ts(a.get("created_at")),
        "updated_at": _ts(a.get("updated_at")),
        "stale": False,
        "stale_reason": None,
        "polled_at": now,
    }


def _results(p: dict[str, Any]) -> list[dict[str, Any]]:
    return p.get("result") or []


def _is_box(r: dict[str, Any]) -> bool:
    rid = str(r.get("id") or "")
    return r.get("from_name") == "box" and rid.startswith("b") and rid[1:].isdigit()


def _box_of(r: dict[str, Any]) -> list[float]:
    v = r.get("value") or {}
    return [float(v.get(k, 0)) / 100 for k in ("y", "x", "height", "width")]


def merge(previous: pd.DataFrame, polled: list[dict[str, Any]], live_tasks: set[int], pushed: set[int]) -> pd.DataFrame:
    """Recorded verdicts ∪ polled ones, one row per ``verdict_id`` (the polled row wins).
    A row recorded before ids carried the annotation's creation time is the polled row's when it
    names the same annotation and member and the same creation time (or none); a replaced database's
    annotation that reuses its ids is another annotation, and both rows stay.
    A recorded verdict whose task was deleted in the tool (``pushed``, the live tasks the last push
    recorded, holds it, the tool does not) stays, marked stale (``task_deleted``); a task the push
    itself replaced is not a deletion: its verdicts keep their meaning."""
    new = pd.DataFrame(polled, columns=VERDICT_COLUMNS)
    old = previous.reindex(columns=VERDICT_COLUMNS) if len(previous) else pd.DataFrame(columns=VERDICT_COLUMNS)
    old = old[~old["verdict_id"].isin(set(new["verdict_id"])) & ~_read_again(old, new)].copy()
    tid = old["task_id"].astype("Int64")
    gone = ~tid.isin(list(live_tasks)) & tid.isin(list(pushed))
    old.loc[gone, "stale"] = True
    old.loc[gone, "stale_reason"] = "task_deleted"
    frames = [f for f in (old, new) if len(f)]
    out = pd.concat(frames, ignore_index=True) if frames else new
    return out.sort_values(["item_id", "created_at", "verdict_id"], kind="stable").reset_index(drop=True)


def _read_again(old: pd.DataFrame, new: pd.DataFrame) -> pd.Series:
    """Old rows (ids without a creation time) that the polled rows read again."""
    polled: dict[tuple[str, str], set[str]] = {}
    for vid, created in zip(new["verdict_id"], new["created_at"], strict=True):
        polled.setdefault((annotation_ref(vid), member_part(vid)), set()).add(created_stamp(created))
    flags = []
    for vid, created in zip(old["verdict_id"], old["created_at"], strict=True):
        seen = polled.get((annotation_ref(vid), member_part(vid))) if is_legacy(vid) else None
        stamp = created_stamp(created)
        flags.append(bool(seen) and (not stamp or stamp in seen))
    return pd.Series(flags, index=old.index, dtype=bool)


def edit_of(row: dict[str, Any]) -> dict[str, Any]:
    e = json.loads(row["edits"]) if isinstance(row.get("edits"), str) and row["edits"] else {}
    if "options" in e:
        e["options"] = as_list(e["options"]) or []
    return e
