"""Reading the tool back, Dagster-free: what a push or read of a benchmark sees of its own tasks
(``view``, ``poll``: only tasks provably its own, ``ownership.sort_out``), the annotations not yet
read (``unread``), a cheap cursor of a set of projects (``fingerprint``), and who gave an
annotation (``who``: the person, its author, and a flag when someone else changed it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from forge.people import identity as ident
from forge.people import ownership
from forge.people.client import LabelStudio, ReviewAPIError
from forge.people.verdict_ids import annotation_ref

Polled = dict[str, list[tuple[int, list[dict[str, Any]]]]]  # kind → [(project id, its own tasks)]


def live_tasks(ls: LabelStudio, project_ids: Iterable[int]) -> dict[int, list[dict[str, Any]]]:
    """project id → its tasks (with annotations); a project deleted in the tool is skipped."""
    out = {}
    for pid in sorted(set(project_ids)):
        try:
            out[pid] = ls.tasks(pid)
        except ReviewAPIError as exc:
            if exc.status != 404:
                raise
            continue  # deleted in the tool: its tasks are gone, their items are queued again
    return out


def stamps(projects: Iterable[Mapping[str, Any]]) -> dict[int, ident.Stamp | None]:
    return {int(p["id"]): ident.stamp_of(p) for p in projects}


@dataclass
class View:
    """What a push or read of one benchmark sees of the tool: per kind, its own live tasks by
    project (``ownership.sort_out``); the other tasks of the projects it looked at (``foreign``,
    never touched); the instance ids the tool's projects carry."""

    ours: dict[str, dict[int, list[dict[str, Any]]]]
    foreign: list[dict[str, Any]]
    instances: set[str]

    def live_refs(self) -> set[str]:
        return {ownership.task_ref(t) for ps in self.ours.values() for ts in ps.values() for t in ts}

    def live_ids(self) -> set[int]:
        return {int(t["id"]) for ps in self.ours.values() for ts in ps.values() for t in ts}


def view(
    ls: LabelStudio, benchmarks: Iterable[str], rows: pd.DataFrame, project_ids: Mapping[str, Iterable[int]]
) -> View:
    """The tool as a push or read of ``benchmarks`` (usually one) may use it: ``project_ids`` (kind →
    the projects to look in), ``rows`` the catalog's records of their tasks (ledger or review_tasks)."""
    projects, names = ls.projects(), list(benchmarks)
    st = stamps(projects)
    ours, foreign = {}, []
    for kind, pids in project_ids.items():
        s = ownership.sort_out(kind, live_tasks(ls, pids), st, names, rows)
        ours[kind] = s.ours
        foreign += s.foreign
    return View(ours, foreign, ident.instances(projects))


def poll(ls: LabelStudio, task_rows: pd.DataFrame, kinds: tuple[str, ...]) -> tuple[Polled, set[int]]:
    """kind → [(project id, its own tasks with annotations)], and the ids of those live tasks.
    ``task_rows``: ``review_tasks`` or ledger rows (their ``benchmark``, ``kind`` and
    ``project_id``); only tasks provably theirs are read (``ownership.sort_out``)."""
    out: Polled = {k: [] for k in kinds}
    live: set[int] = set()
    if not len(task_rows):
        return out, live
    pids = {k: {int(p) for p in task_rows.loc[task_rows["kind"] == k, "project_id"]} for k in kinds}
    v = view(ls, set(task_rows["benchmark"].astype(str)), task_rows, pids)
    for kind in kinds:
        for pid, ts in v.ours[kind].items():
            out[kind].append((pid, ts))
            live |= {int(t["id"]) for t in ts}
    return out, live


# -- what has been read --------------------------------------------------------------------------


def when(v: Any) -> str:
    return "" if v is None or pd.isna(v) else pd.Timestamp(v).tz_convert("UTC").isoformat()


def recorded_keys(verdicts: pd.DataFrame) -> set[str]:
    """``<project>:<annotation>@<created>`` of every verdict row (a unit task's rows are one per
    member): an annotation counts as read only when its id and its creation time match, since a
    replaced database hands out the same ids again."""
    if not len(verdicts):
        return set()
    keys = (annotation_ref(v) for v in verdicts["verdict_id"])
    return {f"{k}@{when(c)}" for k, c in zip(keys, verdicts["created_at"], strict=True)}


def recorded(task: dict[str, Any], pid: int, keys: set[str]) -> bool:
    """Every annotation of the task is in the verdicts table (``keys``: ``recorded_keys``)."""
    return all(f"{pid}:{a['id']}@{when(a.get('created_at'))}" in keys for a in task.get("annotations") or [])


def unread(by_kind: Polled, verdicts: pd.DataFrame) -> list[str]:
    """``<project>:<annotation>@<updated>`` of each submitted annotation the verdicts table does
    not hold at that version (new, or changed since it was read): what the next read takes in. A
    skip counts too: the read records it (``skipped``) and sends it back to its reviewer. An
    annotation is the recorded one only with the same creation time (a replaced database reuses ids)."""
    have: dict[str, Any] = {}
    if len(verdicts):
        # a unit task's annotation has one row per member
        keys = [
            f"{annotation_ref(v)}@{when(c)}"
            for v, c in zip(verdicts["verdict_id"], verdicts["created_at"], strict=True)
        ]
        have = dict(zip(keys, verdicts["updated_at"], strict=True))
    out = []
    for projects in by_kind.values():
        for pid, ts in projects:
            for t in ts:
                for a in t.get("annotations") or []:
                    vid, upd = f"{pid}:{a['id']}", a.get("updated_at")
                    rec = have.get(f"{vid}@{when(a.get('created_at'))}")
                    if rec is None or (upd and pd.Timestamp(upd) > pd.Timestamp(rec)):
                        out.append(f"{vid}@{upd}")
    return sorted(out)


def fingerprint(ls: LabelStudio, task_rows: pd.DataFrame) -> str:
    """Changes whenever an annotation is added, updated or removed, or a task disappears: the
    sensor's cursor for the human baseline's projects (one cheap request per project)."""
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


# -- the person ----------------------------------------------------------------------------------


def user(v: Any, users: Mapping[int, str]) -> str:
    """A user field of an annotation (an id, or the user itself) as the person's e-mail."""
    if isinstance(v, dict):
        return str(v.get("email") or v.get("username") or v.get("id"))
    try:
        return users.get(int(v), str(v))
    except (TypeError, ValueError):
        return str(v)


def who(a: Mapping[str, Any], users: Mapping[int, str]) -> tuple[str, str | None, str | None]:
    """(person, author, flag) of one annotation. The person is whoever last changed it
    (``updated_by``, which Label Studio sets from the request's user on every save and no request
    body can set); ``completed_by`` names the author, and any request may claim it. An annotation
    last changed by someone else than its author is flagged, and its answer does not count."""
    author = user(a["completed_by"], users) if a.get("completed_by") is not None else None
    changer = user(a["updated_by"], users) if a.get("updated_by") is not None else author
    person = changer or "unknown"
    if author is not None and changer != author:
        return person, author, f"changed_by_other: {changer} changed the annotation {author} made"
    return person, author, None


def lead_time(a: Mapping[str, Any]) -> float | None:
    """Label Studio's seconds on the annotation (None when it has none)."""
    return float(a["lead_time"]) if a.get("lead_time") is not None else None
