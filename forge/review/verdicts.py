"""Label Studio annotations → verdict rows, merged with the verdicts already recorded.

One row per annotation (``verdict_id`` = ``<project id>:<annotation id>``): re-reading the tool
replaces a row, never adds a second one. Rows whose task was deleted in the tool stay (nothing
is lost) and are marked stale (``task_deleted``); the item goes back into the queue.
Dagster-free.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from forge.review.items import as_list

VERDICT_COLUMNS = [
    "verdict_id",
    "benchmark",
    "item_id",
    "revision",
    "project_kind",
    "project_id",
    "task_id",
    "reviewer",
    "verdict",
    "reason",
    "edits",
    "edit_status",
    "edit_note",
    "new_revision",
    "edit_blind",
    "seconds",
    "created_at",
    "updated_at",
    "stale",
    "stale_reason",
    "polled_at",
]


def _choices(result: list[dict[str, Any]], name: str) -> list[str]:
    for r in result:
        if r.get("from_name") == name and r.get("type") == "choices":
            return [str(c) for c in (r.get("value") or {}).get("choices") or []]
    return []


def _text(result: list[dict[str, Any]], name: str) -> str | None:
    for r in result:
        if r.get("from_name") == name and r.get("type") == "textarea":
            text = (r.get("value") or {}).get("text") or []
            joined = "\n".join(str(t) for t in (text if isinstance(text, list) else [text])).strip()
            return joined or None
    return None


def moved_boxes(
    result: list[dict[str, Any]], original: dict[str, list[float]], tol: float = 0.002
) -> dict[str, list[float]]:
    """index → [top, left, height, width] (normalised) of boxes that differ from the item's.
    Regions keep the prediction's id (``b<i>``) when a reviewer moves them."""
    out = {}
    for r in result:
        if r.get("from_name") != "box" or r.get("type") != "rectanglelabels":
            continue
        rid = str(r.get("id") or "")
        if not rid.startswith("b") or not rid[1:].isdigit():
            continue
        v = r.get("value") or {}
        tlhw = [float(v.get(k, 0)) / 100 for k in ("y", "x", "height", "width")]
        old = original.get(rid[1:])
        if old is None or any(abs(a - b) > tol for a, b in zip(tlhw, old, strict=True)):
            out[rid[1:]] = [round(x, 4) for x in tlhw]
    return out


def parse_annotation(
    result: list[dict[str, Any]], boxes: dict[str, list[float]], reasons: tuple[str, ...]
) -> dict[str, Any]:
    """(verdict, reason, edits) of one annotation's result. A moved box or a filled correction
    makes it an edit whatever was ticked; an edit without a change is an accept; a reject
    without a reason from the fixed list gets ``other``."""
    chosen = _choices(result, "verdict")
    verdict = chosen[0] if chosen else None
    edits: dict[str, Any] = {}
    for field, tag in (("question", "corrected_question"), ("answer", "corrected_answer")):
        t = _text(result, tag)
        if t is not None:
            edits[field] = t
    opts = _text(result, "corrected_options")
    if opts is not None:
        edits["options"] = [line.strip() for line in opts.splitlines() if line.strip()]
    moved = moved_boxes(result, boxes)
    if moved:
        edits["boxes"] = moved
    if verdict == "reject":
        picked = _choices(result, "reason")
        return {"verdict": "reject", "reason": picked[0] if picked and picked[0] in reasons else "other", "edits": {}}
    if edits:
        return {"verdict": "edit", "reason": None, "edits": edits}
    if verdict in ("accept", "edit"):
        return {"verdict": "accept", "reason": None, "edits": {}}
    return {"verdict": "none", "reason": None, "edits": {}}


def _user(v: Any, users: dict[int, str]) -> str:
    if isinstance(v, dict):
        return str(v.get("email") or v.get("username") or v.get("id"))
    try:
        return users.get(int(v), str(v))
    except (TypeError, ValueError):
        return str(v)


def _ts(v: Any) -> pd.Timestamp | None:
    return pd.Timestamp(v).tz_convert("UTC") if v else None


def verdict_rows(
    benchmark: str,
    kind: str,
    project_id: int,
    tasks: list[dict[str, Any]],
    users: dict[int, str],
    reasons: tuple[str, ...],
) -> list[dict[str, Any]]:
    """Every submitted (not cancelled) annotation of a project's tasks as a verdict row."""
    now = pd.Timestamp(datetime.now(UTC))
    rows = []
    for t in tasks:
        data = t.get("data") or {}
        boxes = {r["id"][1:]: _box_of(r) for p in t.get("predictions") or [] for r in _results(p) if _is_box(r)}
        for a in t.get("annotations") or []:
            if a.get("was_cancelled"):
                continue
            parsed = parse_annotation(a.get("result") or [], boxes, reasons)
            rows.append(
                {
                    "verdict_id": f"{project_id}:{a['id']}",
                    "benchmark": benchmark,
                    "item_id": str(data.get("item_id")),
                    "revision": str(data.get("revision")),
                    "project_kind": kind,
                    "project_id": int(project_id),
                    "task_id": int(t["id"]),
                    "reviewer": _user(a.get("completed_by"), users),
                    "verdict": parsed["verdict"],
                    "reason": parsed["reason"],
                    "edits": json.dumps(parsed["edits"], ensure_ascii=False) if parsed["edits"] else None,
                    "edit_status": None,
                    "edit_note": None,
                    "new_revision": None,
                    "seconds": float(a["lead_time"]) if a.get("lead_time") is not None else None,
                    "created_at": _ts(a.get("created_at")),
                    "updated_at": _ts(a.get("updated_at")),
                    "stale": False,
                    "stale_reason": None,
                    "polled_at": now,
                }
            )
    return rows


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
    A recorded verdict whose task was deleted in the tool (``pushed``, the live tasks the last push
    recorded, holds it, the tool does not) stays, marked stale (``task_deleted``); a task the push
    itself replaced is not a deletion: its verdicts keep their meaning."""
    new = pd.DataFrame(polled, columns=VERDICT_COLUMNS)
    old = previous.reindex(columns=VERDICT_COLUMNS) if len(previous) else pd.DataFrame(columns=VERDICT_COLUMNS)
    old = old[~old["verdict_id"].isin(set(new["verdict_id"]))].copy()
    tid = old["task_id"].astype("Int64")
    gone = ~tid.isin(list(live_tasks)) & tid.isin(list(pushed))
    old.loc[gone, "stale"] = True
    old.loc[gone, "stale_reason"] = "task_deleted"
    frames = [f for f in (old, new) if len(f)]
    out = pd.concat(frames, ignore_index=True) if frames else new
    return out.sort_values(["item_id", "created_at", "verdict_id"], kind="stable").reset_index(drop=True)


def edit_of(row: dict[str, Any]) -> dict[str, Any]:
    e = json.loads(row["edits"]) if isinstance(row.get("edits"), str) and row["edits"] else {}
    if "options" in e:
        e["options"] = as_list(e["options"]) or []
    return e
