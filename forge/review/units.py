"""Review units (docs/review.md, "Review units"): the items a paper's people judged together, shown
as one Label Studio task, read back as one verdict row per member item. Dagster-free.

A benchmark declares its unit in ``ReviewSpec.unit`` (an item column, ``labels.<field>`` or
``extra.<field>``; MAIA: ``labels.question_id``, the pool). A unit of several items is one task:

* ``members``: one block per item (its question, options with the gold marked, context and the
  flags that stand in for the paper's hand fixes), each with its own reject (and reason) and its
  own corrections (``m_<control>_<i>``);
* ``parts``: one block per reference of an item built from several (MAIA's 8 answers of the open
  question), each correctable alone (``p_edit_<j>``): fixing one answer changes only the item that
  holds it.

The unit's own verdict (``verdict``, ``reason``) applies to every member a block does not mark
where the spec lets it (``ReviewSpec.member_answers = unit_covers``; the row says ``member = unit``).
Where each member needs its own answer (``required``), a unit accept or edit is never read as an
unmarked member's accept: that member's row is refused (``member_unanswered``) and the task goes back
to its reviewer; a unit reject still rejects every member. A unit of one item is today's item task (``members`` and ``parts`` empty). Each member row names
the member it concerns (``verdicts.member``) and the revision its reviewer saw.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import pandas as pd

from forge.benchmarks.hooks import PaperHooks
from forge.benchmarks.review_spec import EditChecks, FieldLimits, MemberAnswers, ReviewSpec
from forge.checks import text_rules
from forge.items.cells import as_list, as_object
from forge.people.push import Wanted
from forge.provenance.versioning import content_hash
from forge.review.items import box_predictions, context_text, options_text, revision, task_data
from forge.review.labelconfig import FIELD_TAGS

UNIT_PREFIX = "unit:"  # a unit task's key: unit:<value>
MEMBER_CONTROLS = ("verdict", "reason", "question", "options", "answer")  # m_<control>_<i>
# the Repeater's index as Label Studio writes it (no leading zero: ``m_verdict_01`` is no control)
MEMBER_NAME = re.compile(r"^m_(verdict|reason|question|options|answer)_(0|[1-9][0-9]*)$")
PART_NAME = re.compile(r"^p_edit_(0|[1-9][0-9]*)$")
UNIT_LEVEL = ("verdict", "reason", "reason_note")  # the unit's own controls; corrections go to members
ITEM_FIELDS = tuple(FIELD_TAGS.values())  # the item form's corrections (a task of one item)


def field_value(item: dict[str, Any], key: str) -> Any:
    """The item's value of ``key``: a column, ``labels.<field>``, ``extra.<field>``, or (a bare name
    that is not a column, as ``SplitPolicy.unit_key`` names it) a field of the labels JSON."""
    if key in item and not key.startswith(("labels.", "extra.")):
        return item[key]
    where, _, name = key.partition(".") if key.startswith(("labels.", "extra.")) else ("labels", "", key)
    return as_object(item.get(where)).get(name)


def unit_value(item: dict[str, Any], key: str | None) -> str | None:
    if not key:
        return None
    v = field_value(item, key)
    if v is None or (isinstance(v, float) and v != v) or not str(v).strip():
        return None
    return str(v)


def unit_ids(items: pd.DataFrame, key: str | None) -> dict[str, str]:
    """item_id → its unit (``<key>=<value>``) for items that have one; items without are units of
    their own (absent)."""
    if not key or items.empty:
        return {}
    out = {}
    for it in items.to_dict("records"):
        v = unit_value(it, key)
        if v is not None:
            out[str(it["item_id"])] = f"{key}={v}"
    return out


def groups(items: pd.DataFrame, key: str | None) -> dict[str, list[dict[str, Any]]]:
    """Task key → the unit's items in a stable order (a unit of one keeps its item id as key)."""
    units = unit_ids(items, key)
    by: dict[str, list[dict[str, Any]]] = {}
    for it in items.to_dict("records"):
        u = unit_value(it, key) if str(it["item_id"]) in units else None
        by.setdefault(UNIT_PREFIX + u if u else str(it["item_id"]), []).append(it)
    out = {}
    for k, members in by.items():
        members = sorted(members, key=member_order)
        out[str(members[0]["item_id"]) if len(members) == 1 else k] = members
    return out


def member_order(item: dict[str, Any]) -> tuple[int, int, str]:
    """Open questions first, then pairs by their pool index, then the rest by id."""
    labels = as_object(item.get("labels"))
    idx = labels.get("pool_index")
    return (
        0 if as_list(item.get("references")) and not as_list(item.get("options")) else 1,
        int(idx) if isinstance(idx, int) else 10**6,
        str(item["item_id"]),
    )


def member_title(item: dict[str, Any]) -> str:
    labels = as_object(item.get("labels"))
    task = str(item.get("task") or "item")
    if isinstance(labels.get("pool_index"), int):
        return f"pair {labels['pool_index'] + 1} · {task} · {item['item_id']}"
    return f"{task} · {item['item_id']}"


# -- flags ---------------------------------------------------------------------------------------


def flags(item: dict[str, Any]) -> list[str]:
    """The notes that stand in for the paper's hand fixes (``extra.review``: a list or a string)."""
    notes = as_object(item.get("extra")).get("review")
    if isinstance(notes, str):
        notes = [notes]
    return [str(n) for n in notes or [] if str(n).strip()]


def member_flags(item: dict[str, Any]) -> dict[str, str]:
    """Member label (``answer 3``, ``statement 3``, ``foil 3``) → its own flag (``extra.review_members``)."""
    out = as_object(item.get("extra")).get("review_members")
    return {str(k): str(v) for k, v in (out or {}).items()} if isinstance(out, dict) else {}


def flag_code(note: str) -> str:
    return note.split(":", 1)[0].strip()


def needs_adjudication(members: Iterable[dict[str, Any]], codes: tuple[str, ...]) -> bool:
    return bool(codes) and any(flag_code(n) in codes for it in members for n in flags(it))


def _flag_lines(item: dict[str, Any], only: str | None = None) -> list[str]:
    own = member_flags(item)
    if only is not None:
        return [f"⚑ {only}: {own[only]}"] if only in own else []
    return [f"⚑ {k}: {v}" for k, v in sorted(own.items())]


# -- task data -----------------------------------------------------------------------------------


def unit_revision(members: list[dict[str, Any]]) -> str:
    return content_hash("review-unit", sorted((str(m["item_id"]), revision(m)) for m in members), length=16)


def _member_block(item: dict[str, Any], spec: ReviewSpec, status: str | None) -> dict[str, Any]:
    lines = [str(item.get("question") or "")]
    if as_list(item.get("options")):
        lines.append(options_text(item, spec.show_gold))
    elif spec.show_gold and not as_list(item.get("references")):
        lines.append(f"gold: {item.get('answer')}")
    lines += _flag_lines(item)
    head = member_title(item) + (f" · {status}" if status else "")
    return {
        "item_id": str(item["item_id"]),
        "revision": revision(item),
        "title": head,
        "boxes": bool(as_object(item.get("labels")).get("boxes")),
        "text": "\n".join(x for x in lines if x),
        "context": context_text(item),
    }


def _parts(item: dict[str, Any]) -> list[dict[str, Any]]:
    refs = as_list(item.get("references")) or []
    if len(refs) < 2:  # one reference is the item's answer: corrected through the member's answer field
        return []
    out = []
    for j, r in enumerate(refs):
        label = f"answer {j + 1}"
        text = "\n".join([str(r), *_flag_lines(item, label)])
        out.append({"item_id": str(item["item_id"]), "index": j, "title": f"{label} · {item['item_id']}", "text": text})
    return out


def unit_task_data(
    key: str,
    members: list[dict[str, Any]],
    spec: ReviewSpec,
    video: str | None,
    status: dict[str, str] | None = None,
    kind: str = "review",
) -> dict[str, Any]:
    """The task of one unit: a unit of one item is that item's task; otherwise the first member's
    media, a heading naming the unit, the unit's own flags, and one block per member and per part."""
    first = members[0]
    if len(members) == 1:
        return task_data(first, spec, video, kind)  # its ``members`` and ``parts`` are empty
    data = task_data(first, spec, video, kind)
    status = status or {}
    shared = (field_value(first, spec.unit_question) if spec.unit_question else None) or first.get("question")
    notes = sorted({n for it in members for n in flags(it)})
    data.update(
        {
            "item_id": key,
            "task_key": key,
            "revision": unit_revision(members),
            "heading": f"{first.get('benchmark')} · unit {key.removeprefix(UNIT_PREFIX)} · {len(members)} items · "
            f"split {first.get('split')}",
            "question": str(shared or ""),
            "options_text": "(each member below: mark the one that is wrong, or correct it in its own block)",
            "answer_text": "(each member's gold is marked in its block)",
            "context_text": "\n".join(f"⚑ {n}" for n in notes) or "(no flags)",
            "members": [_member_block(it, spec, status.get(str(it["item_id"]))) for it in members],
            "parts": [p for it in members for p in _parts(it)],
        }
    )
    return data


# -- reading a unit annotation -------------------------------------------------------------------


class UnitRefused(ValueError):
    """A unit annotation that cannot be read as one verdict per member; the message says why."""


def _one(result: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    got = [r for r in result if r.get("from_name") == name]
    if len(got) > 1:
        raise UnitRefused(f"several_values: {name} was given {len(got)} times")
    return got[0] if got else None


def _choice(entry: dict[str, Any] | None, allowed: tuple[str, ...], what: str) -> str | None:
    if entry is None:
        return None
    picked = [str(c) for c in (entry.get("value") or {}).get("choices") or []]
    if len(picked) != 1:
        raise UnitRefused(f"several_{what}s: {', '.join(picked) or 'none'} chosen where one is allowed")
    if picked[0] not in allowed:
        raise UnitRefused(f"unknown_{what}: {picked[0]!r} is not one of {', '.join(allowed)}")
    return picked[0]


def _typed(entry: dict[str, Any] | None, what: str, limit: int) -> str | None:
    if entry is None:
        return None
    text = (entry.get("value") or {}).get("text")
    parts = text if isinstance(text, list) else [text]
    return _readable("\n".join(str(t) for t in parts if t is not None), f"the corrected {what}", limit)


def _readable(value: str, what: str, limit: int) -> str:
    """``value`` as text people can read (``forge.checks.text_rules``) within ``limit`` characters."""
    for _ in range(2):  # before the rules walk a megabyte, and after NFC
        if len(value) > limit:
            raise UnitRefused(f"too_long: {what} has {len(value)} characters (limit {limit})")
        try:
            value = text_rules.clean(value, what)
        except text_rules.TextRefused as exc:
            hint = " (leave the field out to keep it)" if exc.code == "empty_field" else ""
            raise UnitRefused(f"{exc}{hint}") from exc
    return value


def _check_names(result: Any, n_members: int, n_parts: int) -> list[dict[str, Any]]:
    if not isinstance(result, list) or not result:
        raise UnitRefused("empty_result: the annotation holds no answer")
    for r in result:
        name = str(r.get("from_name")) if isinstance(r, dict) else ""
        kind, to = (r.get("type"), r.get("to_name")) if isinstance(r, dict) else (None, None)
        m, p = MEMBER_NAME.match(name), PART_NAME.match(name)
        if name in ITEM_FIELDS:  # the item form's own corrections: a unit of several items has none
            raise UnitRefused(f"unit_correction: {name} corrects one item; correct each member in its own block")
        target = "question"
        if name in UNIT_LEVEL:
            ok = kind == ("textarea" if name == "reason_note" else "choices")
        elif name == "box":
            ok, target = kind == "rectanglelabels", "image"
        elif m:
            ok = int(m.group(2)) < n_members and kind == (
                "choices" if m.group(1) in ("verdict", "reason") else "textarea"
            )
            target = f"m_text_{int(m.group(2))}"  # a member's controls are about its own block
        elif p:
            ok, target = int(p.group(1)) < n_parts and kind == "textarea", f"p_text_{int(p.group(1))}"
        else:
            ok = False
        if not ok:
            raise UnitRefused(f"unknown_control: {name!r} ({kind}) is not a control of this unit's form")
        if to != target:  # an answer about another object than its control's is read as nothing
            raise UnitRefused(f"unknown_target: {name!r} names {to!r}; the form's {name} is about {target!r}")
    return result


def _member_edits(result: list[dict[str, Any]], i: int, limits: FieldLimits) -> dict[str, Any]:
    edits: dict[str, Any] = {}
    q = _typed(_one(result, f"m_question_{i}"), f"question of member {i + 1}", limits.question)
    a = _typed(_one(result, f"m_answer_{i}"), f"answer of member {i + 1}", limits.answer)
    o = _typed(_one(result, f"m_options_{i}"), f"options of member {i + 1}", limits.options_chars())
    if q is not None:
        edits["question"] = q
    if a is not None:
        edits["answer"] = a
    if o is not None:
        lines = [x for x in o.splitlines() if x.strip()]  # blank lines are layout
        if len(lines) > limits.options or any(len(x.strip()) > limits.option for x in lines):
            raise UnitRefused(f"too_long: the options of member {i + 1} exceed {limits.options} × {limits.option}")
        what = f"option {{}} of member {i + 1}"
        edits["options"] = [_readable(x, what.format(j + 1), limits.option) for j, x in enumerate(lines)]
    return edits


def parse_unit(
    result: list[dict[str, Any]],
    data: dict[str, Any],
    reasons: tuple[str, ...],
    limits: FieldLimits | None = None,
    moved: dict[str, list[float]] | str | None = None,
    member_answers: MemberAnswers | str = MemberAnswers.UNIT_COVERS,
) -> list[dict[str, Any]]:
    """One parsed verdict per member item of a unit annotation: ``item_id``, ``revision`` (the one
    shown), ``member`` (what the verdict names: ``unit``, the member block, or the parts edited),
    ``moved``: the unit's boxes a reviewer moved (``verdicts.moved_boxes``; its refusal as text),
    ``verdict``, ``reason``, ``note``, ``edits``, ``refused``. Under ``unit_covers`` the unit's
    verdict applies to every member its block leaves unmarked; under ``required`` a member needs its
    own answer (accept or reject in its block, or a correction there) unless the unit is rejected,
    and one left unanswered is refused alone (``member_unanswered``). A member's reject needs its
    reason; corrections need the unit verdict ``edit``. Anything else is refused for every member,
    with the reason, never guessed."""
    members, parts = list(data.get("members") or []), list(data.get("parts") or [])
    covers = MemberAnswers(member_answers) == MemberAnswers.UNIT_COVERS
    try:
        return _parse_unit(result, members, parts, reasons, limits or FieldLimits(), moved or {}, covers)
    except UnitRefused as exc:
        return refused_unit(data, str(exc))


def refused_unit(data: dict[str, Any], why: str) -> list[dict[str, Any]]:
    """The unit annotation refused for every member, with the reason."""
    return [_row(m, "unit", "refused", refused=why) for m in data.get("members") or []]


def _row(m: dict[str, Any], member: str, verdict: str, **kw: Any) -> dict[str, Any]:
    base = {"reason": None, "note": None, "edits": {}, "refused": None}
    return {
        "item_id": str(m["item_id"]),
        "revision": str(m["revision"]),
        "member": member,
        "verdict": verdict,
        **base,
        **kw,
    }


def _parse_unit(
    result: list[dict[str, Any]],
    members: list[dict[str, Any]],
    parts: list[dict[str, Any]],
    reasons: tuple[str, ...],
    limits: FieldLimits,
    moved: dict[str, list[float]] | str,
    covers: bool = True,
) -> list[dict[str, Any]]:
    result = _check_names(result, len(members), len(parts))
    unit = _choice(_one(result, "verdict"), ("accept", "reject", "edit"), "verdict")
    if unit is None:
        raise UnitRefused("no_verdict: no verdict chosen for the unit (one of accept, reject, edit)")
    note_entry = _one(result, "reason_note")
    note = _typed(note_entry, "note", limits.reason_note) if note_entry is not None else None
    unit_reason = _choice(_one(result, "reason"), reasons, "reason")
    if unit == "reject" and unit_reason is None:
        raise UnitRefused(f"no_reason: the unit was rejected without a reason (one of {', '.join(reasons)})")
    edits: dict[str, dict[str, Any]] = {}
    named: dict[str, list[str]] = {}
    for i, m in enumerate(members):
        e = _member_edits(result, i, limits)
        if e:
            edits.setdefault(str(m["item_id"]), {}).update(e)
            named.setdefault(str(m["item_id"]), []).append(f"member {i + 1}")
    for j, p in enumerate(parts):
        t = _typed(_one(result, f"p_edit_{j}"), f"part {j + 1} ({p.get('title')})", limits.answer)
        if t is not None:
            refs = edits.setdefault(str(p["item_id"]), {}).setdefault("references", {})
            refs[str(p["index"])] = t
            named.setdefault(str(p["item_id"]), []).append(f"answer {int(p['index']) + 1}")
    own = set(edits)  # members corrected in their own blocks: an answer of their own (a moved box is not)
    # the unit's shared image regions (Hummus: the annotation's boxes, in every item of the pair): a
    # moved box edits every member that carries boxes, and makes the unit's accept an edit
    if isinstance(moved, str):  # a box drawn anew, or one the reader could not place (verdicts.moved_boxes)
        raise UnitRefused(moved)
    if moved:
        unit = "edit" if unit == "accept" and not edits else unit
        for m in members:
            if m.get("boxes"):
                edits.setdefault(str(m["item_id"]), {})["boxes"] = moved
                named.setdefault(str(m["item_id"]), []).append("boxes")
    if edits and unit != "edit":
        raise UnitRefused(f"{unit}_with_corrections: {unit} was chosen with corrections: choose edit to apply them")
    if unit == "edit" and not edits:
        raise UnitRefused("edit_without_changes: 'edit' was chosen but no member was corrected")
    marks = ("reject",) if covers else ("accept", "reject")  # the form offers a member's accept where it needs one
    out = []
    for i, m in enumerate(members):
        iid = str(m["item_id"])
        mark = _choice(_one(result, f"m_verdict_{i}"), marks, "member verdict")
        why = _choice(_one(result, f"m_reason_{i}"), reasons, "reason")
        if mark == "reject":
            if why is None:
                raise UnitRefused(f"no_reason: member {i + 1} ({m.get('title')}) was rejected without a reason")
            if iid in edits:
                raise UnitRefused(f"reject_with_corrections: member {i + 1} was both rejected and corrected")
            out.append(_row(m, f"member {i + 1}", "reject", reason=why, note=note))
        elif mark == "accept" and unit == "reject":
            raise UnitRefused(f"accept_in_rejected_unit: member {i + 1} was accepted and the unit rejected")
        elif mark == "accept" and iid in own:
            raise UnitRefused(f"accept_with_corrections: member {i + 1} was accepted and corrected in its block")
        elif unit == "reject":
            out.append(_row(m, "unit", "reject", reason=unit_reason, note=note))
        elif iid in edits and (covers or mark or iid in own):
            out.append(_row(m, ", ".join(named[iid]), "edit", note=note, edits=edits[iid]))
        elif mark == "accept":
            out.append(_row(m, f"member {i + 1}", "accept", note=note))
        elif covers:
            out.append(_row(m, "unit", "accept", note=note))
        else:  # the unit's answer is not this member's: refused alone, the task goes back for it
            out.append(_row(m, "unit", "refused", refused=unanswered(i, m, unit)))
    return out


def unanswered(i: int, m: dict[str, Any], unit: str) -> str:
    """Why a member left unanswered under ``member_answers = required`` is refused (for people)."""
    return (
        f"member_unanswered: member {i + 1} ({m.get('title')}) has no answer of its own; the unit's {unit} "
        "does not stand for it: accept it, reject it with a reason, or correct it in its own block"
    )


# -- a member edit checked against its unit --------------------------------------------------------


def unit_problem(
    new: dict[str, Any],
    old: dict[str, Any],
    others: list[dict[str, Any]],
    hooks: PaperHooks,
    checks: EditChecks | None = None,
) -> str | None:
    """Why an edited member breaks its unit (None when it does not): the number of references (a
    pool's answers) must stay, no two may be equal, and the stage's own checks of the member
    (the paper's ``hooks.member_check``, with the stage's NLI backend in ``checks``) must pass."""
    was, now = as_list(old.get("references")) or [], as_list(new.get("references")) or []
    if len(was) > 1 and len(now) != len(was):
        return f"unit_size: the edit leaves {len(now)} answers where the unit has {len(was)}"
    seen: dict[str, int] = {}
    for j, r in enumerate(now):
        k = " ".join(str(r).casefold().split())
        if k in seen:
            return f"duplicate_member: answer {j + 1} repeats answer {seen[k] + 1} ({str(r)[:80]})"
        seen[k] = j
    return hooks.member_check(new, old, others, checks if checks is not None else EditChecks())


def flag_outcome(verdict: str, named: bool) -> str:
    """What reviewing a flagged member did to its flag: a reject confirms it, an edit of that very
    member fixes it, an accept (or an edit of another member) clears it: the reviewer saw it and
    kept it as it is."""
    if verdict == "reject":
        return "confirmed"
    return "fixed" if verdict == "edit" and named else "cleared"


def dumps(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


# -- the tasks a push wants ------------------------------------------------------------------------


def wanted(
    items: pd.DataFrame,
    spec: ReviewSpec,
    clips: dict[str, str],
    kind: str,
    prior: dict[str, str] | None = None,
) -> dict[str, Wanted]:
    """Task key → the task of every unit ``kind`` wants (``items`` carry ``review_status``): a unit
    with a disputed member goes to adjudication whole (the adjudicator's verdict is final for every
    member), one with a pending member (and none disputed) to review. A unit of one item is the
    item's task, its boxes pre-drawn."""
    status = dict(zip(items["item_id"].astype(str), items["review_status"].astype(str), strict=True))
    out: dict[str, Wanted] = {}
    for key, members in groups(items, spec.unit).items():
        states = {status.get(str(m["item_id"])) for m in members}
        if ("disputed" in states) != (kind == "adjudication") or (kind == "review" and "pending" not in states):
            continue
        data = unit_task_data(key, members, spec, clips.get(str(members[0].get("unit_id"))), status, kind)
        if prior is not None:
            lines = [
                *(f"⚑ {n}" for n in sorted({n for m in members for n in flags(m)})),
                *(f"{m['item_id']}: {line}" for m in members for line in prior.get(str(m["item_id"]), "").splitlines()),
            ]
            data["prior_text"] = "\n".join(lines) or "(no verdicts yet: the unit's flags send it here)"
        boxed = [m for m in members if as_object(m.get("labels")).get("boxes")]
        preds = box_predictions(boxed[0]) if spec.boxes and boxed else []  # the unit's shared regions
        out[key] = Wanted(data, preds)
    return out


def unit_of_item(items: pd.DataFrame, key: str | None, item_id: str) -> tuple[str, list[dict[str, Any]]] | None:
    """(task key, members) of the unit holding ``item_id``."""
    for k, members in groups(items, key).items():
        if any(str(m["item_id"]) == item_id for m in members):
            return k, members
    return None
