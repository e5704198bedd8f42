"""Pushing tasks to Label Studio and reading them back, idempotently. Dagster-free.

``push`` makes the tool hold exactly one live task per wanted item at its current revision:

* an item whose task (any project of that kind) is at the current revision keeps it;
* an item that changed gets a new task, and its old task is deleted once every annotation on
  it is recorded in the verdicts table (until then it stays: nothing is lost);
* an item whose task was deleted in the tool gets a new one (back in the queue);
* a task of an item already decided stays (its verdicts keep counting);
* a task of an item no longer gated is deleted on the same condition.

Rows of the ``review_tasks`` table describe the live tasks after the push.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from forge.review.client import LabelStudio, ReviewAPIError

TASK_COLUMNS = [
    "benchmark",
    "kind",
    "item_id",
    "revision",
    "project_id",
    "project_title",
    "task_id",
    "action",
    "pushed_at",
]


@dataclass
class Wanted:
    data: dict[str, Any]  # task data (``item_id`` and ``revision`` included)
    predictions: list[dict[str, Any]] = field(default_factory=list)


def live_tasks(ls: LabelStudio, project_ids: set[int]) -> dict[int, list[dict[str, Any]]]:
    """project id → its tasks (with annotations); a project deleted in the tool is skipped."""
    out = {}
    for pid in sorted(project_ids):
        try:
            out[pid] = ls.tasks(pid)
        except ReviewAPIError:
            continue  # deleted in the tool: its tasks are gone, their items are queued again
    return out


def _recorded(task: dict[str, Any], pid: int, recorded: set[str]) -> bool:
    return all(f"{pid}:{a['id']}" in recorded for a in task.get("annotations") or [])


def push(
    ls: LabelStudio,
    benchmark: str,
    kind: str,
    project: Mapping[str, Any],
    wanted: Mapping[str, Wanted],
    previous: pd.DataFrame,
    recorded: set[str],
    keep: set[str] | frozenset[str] = frozenset(),
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Bring ``project`` (and older projects of ``kind`` named in ``previous``) in line with
    ``wanted``; tasks of the items in ``keep`` (decided, or not needing this kind) stay as they
    are, so their verdicts keep counting. Returns the task rows and counts by action."""
    prev = previous[previous["kind"] == kind] if len(previous) else previous
    pids = {int(project["id"]), *(int(p) for p in (prev["project_id"] if len(prev) else []))}
    tasks = live_tasks(ls, pids)
    titles = {int(project["id"]): str(project["title"])}
    seen_before = {(str(r.item_id), str(r.revision)) for r in prev.itertuples()} if len(prev) else set()
    counts = dict.fromkeys(("kept", "created", "recreated", "replaced", "deleted", "deferred"), 0)
    now = pd.Timestamp(datetime.now(UTC))
    rows: list[dict[str, Any]] = []
    have: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for pid, ts in tasks.items():
        for t in ts:
            have.setdefault(str((t.get("data") or {}).get("item_id")), []).append((pid, t))

    def row(item_id: str, rev: str, pid: int, tid: int, action: str) -> dict[str, Any]:
        return {
            "benchmark": benchmark,
            "kind": kind,
            "item_id": item_id,
            "revision": rev,
            "project_id": pid,
            "project_title": titles.get(pid, str(pid)),
            "task_id": tid,
            "action": action,
            "pushed_at": now,
        }

    for item_id, w in wanted.items():
        rev = str(w.data["revision"])
        mine = have.pop(item_id, [])
        current = [(pid, t) for pid, t in mine if str(t["data"].get("revision")) == rev]
        for pid, t in mine:
            if (pid, t) in current[:1]:
                continue
            if _recorded(t, pid, recorded):
                ls.delete_task(int(t["id"]))
                counts["replaced"] += 1
            else:
                counts["deferred"] += 1  # annotations not yet read back: deleted by a later push
                rows.append(row(item_id, str(t["data"].get("revision")), pid, int(t["id"]), "deferred"))
        if current:
            pid, t = current[0]
            rows.append(row(item_id, rev, pid, int(t["id"]), "kept"))
            counts["kept"] += 1
            continue
        tid = ls.create_task(int(project["id"]), w.data, w.predictions)
        action = "recreated" if (item_id, rev) in seen_before else "created"
        counts[action] += 1
        rows.append(row(item_id, rev, int(project["id"]), tid, action))
    for item_id, mine in have.items():  # items no longer wanted: kept when decided, else deleted
        for pid, t in mine:
            if item_id in keep:
                rows.append(row(item_id, str(t["data"].get("revision")), pid, int(t["id"]), "kept"))
            elif _recorded(t, pid, recorded):
                ls.delete_task(int(t["id"]))
                counts["deleted"] += 1
            else:
                counts["deferred"] += 1
                rows.append(row(item_id, str(t["data"].get("revision")), pid, int(t["id"]), "deferred"))
    return pd.DataFrame(rows, columns=TASK_COLUMNS), counts


def poll(
    ls: LabelStudio, task_rows: pd.DataFrame, kinds: tuple[str, ...]
) -> tuple[dict[str, list[tuple[int, list[dict[str, Any]]]]], set[int]]:
    """kind → [(project id, its tasks with annotations)], and the ids of every live task."""
    out: dict[str, list[tuple[int, list[dict[str, Any]]]]] = {k: [] for k in kinds}
    live: set[int] = set()
    if not len(task_rows):
        return out, live
    for kind in kinds:
        pids = {int(p) for p in task_rows.loc[task_rows["kind"] == kind, "project_id"]}
        for pid, ts in live_tasks(ls, pids).items():
            out[kind].append((pid, ts))
            live |= {int(t["id"]) for t in ts}
    return out, live


def fingerprint(ls: LabelStudio, task_rows: pd.DataFrame) -> str:
    """Changes whenever an annotation is added, updated or removed, or a task disappears: the
    sensor's cursor (one cheap request per project)."""
    parts = []
    for pid in sorted({int(p) for p in task_rows["project_id"]}) if len(task_rows) else []:
        try:
            p = ls.request("GET", f"/api/projects/{pid}")
        except ReviewAPIError:
            parts.append(f"{pid}:gone")
            continue
        keys = ("task_number", "total_annotations_number", "num_tasks_with_annotations", "finished_task_number")
        parts.append(f"{pid}:" + ",".join(str(p.get(k)) for k in keys))
        ts = ls.tasks(pid)
        parts.append(",".join(f"{t['id']}/{t.get('updated_at')}" for t in ts))
    return "|".join(parts)
