"""Pushing tasks to Label Studio and reading them back, idempotently. Dagster-free.

A push is planned (``plan``), then carried out (``execute``). It makes the tool hold exactly one
live task per wanted key (an item; for ``returned``, a refused verdict) at the key's current
revision, in the kind's one project:

* a task at the current revision in that project is kept;
* an item that changed gets a new task, and its old task is deleted once every annotation on
  it is recorded in the verdicts table (until then it stays, ``deferred``: nothing is lost);
* with ``consolidate`` (review, adjudication, returned: one project per benchmark and kind), a
  current task in another project of the kind (a project of an older export round) is
  ``moved``: created in the project, the old one deleted on the same condition;
* a key whose task was deleted in the tool gets a new one (``recreated``: back in the queue);
* a task of a key in ``keep`` (an item already decided) stays (its verdicts keep counting);
* a task of a key no longer wanted is deleted on the same condition.

Rows of the ``review_tasks`` table describe the live tasks after the push. The ledger
(``review_task_ledger``) only grows: every task a push made or found (``created``,
``recreated``, ``moved``, ``adopted``), deleted itself (``deleted``) or found gone from the tool
(``missing``). ``pushed_ids`` are the tasks the tool should still have; one it does not have was
deleted in the tool, so its verdicts are stale (``verdicts.merge``) and its key is pushed again,
in whichever order the push and the read run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from forge.people import identity as ident
from forge.people import ownership
from forge.people.client import LabelStudio, ReviewAPIError, ReviewServerDown
from forge.people.verdict_ids import annotation_ref

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
LEDGER_COLUMNS = [
    "benchmark",
    "kind",
    "item_id",
    "revision",
    "task_key",
    "project_id",
    "project_title",
    "task_id",
    "event",
    "recorded_at",
    "instance",
    "task_uid",
]
MADE = ("created", "recreated", "moved", "adopted")  # ledger events of a task the tool should have
GONE = ("deleted", "lost")  # ledger events after which the tool no longer should have the task
COUNTS = ("kept", "created", "recreated", "moved", "replaced", "deleted", "deferred")


@dataclass
class Wanted:
    data: dict[str, Any]  # task data (``item_id`` and ``revision`` included; ``task_key`` when not the item)
    predictions: list[dict[str, Any]] = field(default_factory=list)


task_key = ownership.task_key
_rev = ownership.revision


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


def _when(v: Any) -> str:
    return "" if v is None or pd.isna(v) else pd.Timestamp(v).tz_convert("UTC").isoformat()


def recorded_keys(verdicts: pd.DataFrame) -> set[str]:
    """``<project>:<annotation>@<created>`` of every verdict row (a unit task's rows are one per
    member): an annotation counts as read only when its id and its creation time match, since a
    replaced database hands out the same ids again."""
    if not len(verdicts):
        return set()
    keys = (annotation_ref(v) for v in verdicts["verdict_id"])
    return {f"{k}@{_when(c)}" for k, c in zip(keys, verdicts["created_at"], strict=True)}


def _recorded(task: dict[str, Any], pid: int, recorded: set[str]) -> bool:
    """Every annotation of the task is in the verdicts table (``recorded``: ``recorded_keys``)."""
    return all(f"{pid}:{a['id']}@{_when(a.get('created_at'))}" in recorded for a in task.get("annotations") or [])


# -- the ledger ----------------------------------------------------------------------------------


def empty_ledger() -> pd.DataFrame:
    return pd.DataFrame(columns=LEDGER_COLUMNS)


def _refs(ledger: pd.DataFrame, events: Iterable[str]) -> dict[str, int]:
    """ref → task id of the ledger's rows of ``events`` (``ownership.ref``)."""
    if not len(ledger):
        return {}
    rows = ledger.loc[ledger["event"].isin(list(events))]
    return dict(zip(ownership.row_refs(rows), rows["task_id"].astype(int), strict=True))


def _pushed(ledger: pd.DataFrame) -> dict[str, int]:
    gone = _refs(ledger, GONE)
    return {r: t for r, t in _refs(ledger, MADE).items() if r not in gone}


def pushed_ids(ledger: pd.DataFrame, instances: set[str] | None = None) -> set[int]:
    """Tasks a push made or adopted and never deleted itself, in the database the tool runs now
    (a task ``lost`` with a replaced database is not counted; with ``instances``, the instance ids
    the tool's projects carry, neither is one made in another instance and not yet recorded lost):
    the tool should have each of them."""
    pushed = _pushed(ledger)
    if instances is None or not pushed:
        return set(pushed.values())
    refs = ownership.row_refs(ledger)
    elsewhere = {
        r for r, i in zip(refs, ledger["instance"], strict=True) if isinstance(i, str) and i and i not in instances
    }
    return {t for r, t in pushed.items() if r not in elsewhere}


def unacknowledged(ledger: pd.DataFrame, live: set[str]) -> set[int]:
    """Tasks the tool should have, does not (``live``: refs of the benchmark's own live tasks), and
    no push has noted missing yet (the next push recreates their keys)."""
    missing = _refs(ledger, ("missing",))
    return {t for r, t in _pushed(ledger).items() if r not in missing and r not in live}


def ledger_projects(ledger: pd.DataFrame, kind: str) -> set[int]:
    """The projects of ``kind`` where the ledger expects tasks of its own (tasks deleted or lost
    name projects that another database may have given the same id)."""
    if not len(ledger):
        return set()
    pushed = set(_pushed(ledger))
    rows = ledger[(ledger["kind"] == kind) & pd.Series(ownership.row_refs(ledger), index=ledger.index).isin(pushed)]
    return {int(p) for p in rows["project_id"]}


def event(
    benchmark: str, kind: str, key: str, task: Mapping[str, Any], pid: int, title: str, name: str, at: Any
) -> dict[str, Any]:
    data = task.get("data") or {}
    me = ident.identity(task) or {}
    return {
        "benchmark": benchmark,
        "kind": kind,
        "item_id": str(data.get("item_id")),
        "revision": str(data.get("revision")),
        "task_key": key,
        "project_id": int(pid),
        "project_title": title,
        "task_id": int(task["id"]),
        "event": name,
        "recorded_at": at,
        "instance": str(me.get("instance") or task.get("instance") or ""),
        "task_uid": str(me.get("uid") or task.get("task_uid") or ""),
    }


def seed_ledger(review_tasks: pd.DataFrame, kinds: Iterable[str]) -> pd.DataFrame:
    """A ledger for tasks pushed before the ledger existed: each recorded task ``adopted``."""
    rows = review_tasks[review_tasks["kind"].isin(list(kinds))] if len(review_tasks) else review_tasks
    if not len(rows):
        return empty_ledger()
    out = rows.assign(task_key=rows["item_id"].astype(str), event="adopted", recorded_at=rows["pushed_at"])
    return out.assign(instance="", task_uid="").reindex(columns=LEDGER_COLUMNS).reset_index(drop=True)


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


def instance_state(ledger: pd.DataFrame, tool: set[str]) -> tuple[str, str]:
    """(state, the instance the catalog's live tasks were made in): ``new`` when the catalog holds
    no live task with identity, ``same`` when the tool's projects carry their instance,
    ``replaced`` when some were made in an instance no project in the tool carries now (the
    database was replaced or re-created, or every Subtext Forge project deleted in the tool) and
    are not yet recorded ``lost``."""
    pushed = _pushed(ledger)
    rows = ledger.assign(ref=ownership.row_refs(ledger)) if len(ledger) else ledger
    live = rows[rows["ref"].isin(list(pushed)) & rows["event"].isin(MADE)] if len(rows) else rows
    seen = [str(i) for i in live["instance"] if isinstance(i, str) and i] if len(live) else []
    gone = [i for i in seen if i not in tool]
    if gone:
        return "replaced", gone[-1]
    return ("same", seen[-1]) if seen else ("new", "")


def reconcile(
    benchmark: str, ledger: pd.DataFrame, v: View, titles: Mapping[int, str]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The catalog and the tool compared both ways: ledger events for the benchmark's own live
    tasks the ledger does not know (``adopted``: made by a push that was killed, or found again in
    a restored database), for tasks it should have but does not (``missing``, once per task: the
    next push recreates them), and for tasks made in a database the tool no longer runs (``lost``,
    once: their verdicts keep counting, their open keys are pushed again); and the figures of the
    reconciliation (``review_reconciliation``). Nothing is deleted for a disagreement."""
    now = pd.Timestamp(datetime.now(UTC))
    known = set(_refs(ledger, (*MADE, *GONE)))
    out = []
    for kind, projects in v.ours.items():
        for pid, ts in projects.items():
            for t in ts:
                if ownership.task_ref(t) not in known:
                    out.append(event(benchmark, kind, task_key(t), t, pid, titles.get(pid, ""), "adopted", now))
    state, before = instance_state(ledger, v.instances)
    pushed = _pushed(ledger)
    last = ledger.assign(ref=ownership.row_refs(ledger)).drop_duplicates("ref", keep="last") if len(ledger) else ledger
    live, missing = v.live_refs(), set(_refs(ledger, ("missing",)))
    lost = 0
    for r in last.itertuples() if len(last) else []:
        if r.ref not in pushed or r.ref in live:
            continue
        inst = r.instance if isinstance(r.instance, str) else ""
        name = "lost" if inst and inst not in v.instances else "missing"
        if name == "missing" and r.ref in missing:
            continue
        lost += name == "lost"
        t = {"id": r.task_id, "data": {"item_id": r.item_id, "revision": r.revision}}
        t |= {"instance": inst, "task_uid": r.task_uid if isinstance(r.task_uid, str) else ""}
        out.append(event(benchmark, r.kind, str(r.task_key), t, int(r.project_id), r.project_title, name, now))
    figures = {
        "state": state,
        "catalog_instance": before,
        "tool_instances": sorted(v.instances),
        "adopted": sum(e["event"] == "adopted" for e in out),
        "missing": sum(e["event"] == "missing" for e in out),
        "lost": lost,
        "foreign": len(v.foreign),
    }
    return out, figures


# -- plan and execute ----------------------------------------------------------------------------


@dataclass
class Step:
    action: str  # keep | create | delete | defer
    label: str  # the review_tasks action / the count it adds to
    key: str
    project_id: int
    task: dict[str, Any] = field(default_factory=dict)  # the live task (keep / delete / defer)
    wanted: Wanted | None = None  # what to create


@dataclass
class Plan:
    benchmark: str
    kind: str
    project: Mapping[str, Any]
    titles: Mapping[int, str]
    steps: list[Step]

    def creations(self) -> int:
        return sum(s.action == "create" for s in self.steps)


class PushInterrupted(ReviewServerDown):
    """Label Studio stopped answering mid-push; ``progress`` says what had been done."""

    def __init__(self, progress: Progress, cause: BaseException):
        self.progress = progress
        p = progress
        super().__init__(
            f"{p.done} of {p.total} tasks pushed before Label Studio stopped"
            + (f" ({p.deleted} outdated tasks deleted)" if p.deleted else "")
            + f"; the next push continues. {cause}"
        )


@dataclass
class Progress:
    total: int  # tasks the push means to create
    done: int = 0
    deleted: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)  # ledger rows of what was done


def plan(
    benchmark: str,
    kind: str,
    project: Mapping[str, Any],
    wanted: Mapping[str, Wanted],
    tasks: Mapping[int, list[dict[str, Any]]],
    recorded: set[str],
    keep: set[str] | frozenset[str] = frozenset(),
    known: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset(),
    titles: Mapping[int, str] | None = None,
    consolidate: bool = False,
) -> Plan:
    """What a push of ``kind`` does (module doc): ``tasks`` are the live tasks of the kind's
    projects; ``known`` the (key, revision) pairs a push made before (a missing one is recreated)."""
    main = int(project["id"])
    have: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for pid, ts in tasks.items():
        for t in ts:
            have.setdefault(task_key(t), []).append((pid, t))
    steps: list[Step] = []

    def retire(key: str, pid: int, t: dict[str, Any], label: str) -> None:
        done = _recorded(t, pid, recorded)  # annotations not yet read back: deleted by a later push
        steps.append(Step("delete" if done else "defer", label if done else "deferred", key, pid, t))

    for key, w in wanted.items():
        rev = str(w.data["revision"])
        mine = have.pop(key, [])
        current = [(pid, t) for pid, t in mine if _rev(t) == rev and (pid == main or not consolidate)]
        moving = not current and any(_rev(t) == rev for _pid, t in mine)
        for pid, t in mine:
            if current and t is current[0][1]:
                continue
            retire(key, pid, t, "replaced")
        if current:
            steps.append(Step("keep", "kept", key, current[0][0], current[0][1]))
            continue
        label = "moved" if moving else ("recreated" if (key, rev) in known else "created")
        steps.append(Step("create", label, key, main, wanted=w))
    for key, mine in have.items():  # keys no longer wanted: kept when decided, else deleted
        for pid, t in mine:
            if key in keep:
                steps.append(Step("keep", "kept", key, pid, t))
            else:
                retire(key, pid, t, "deleted")
    return Plan(benchmark, kind, project, {main: str(project["title"]), **(titles or {})}, steps)


def execute(ls: LabelStudio, p: Plan, progress: Progress) -> tuple[pd.DataFrame, dict[str, int]]:
    """Carry out a plan: the ``review_tasks`` rows and counts by action; every task created or
    deleted is appended to ``progress.events`` as it happens. Label Studio stopping midway raises
    ``PushInterrupted`` (what was done stays in ``progress``)."""
    counts = dict.fromkeys(COUNTS, 0)
    now = pd.Timestamp(datetime.now(UTC))
    rows: list[dict[str, Any]] = []

    def row(key: str, t: Mapping[str, Any], pid: int, action: str) -> None:
        data = t.get("data") or {}
        rows.append(
            {
                "benchmark": p.benchmark,
                "kind": p.kind,
                "item_id": str(data.get("item_id")),
                "revision": str(data.get("revision")),
                "project_id": int(pid),
                "project_title": p.titles.get(pid, str(pid)),
                "task_id": int(t["id"]),
                "action": action,
                "pushed_at": now,
            }
        )

    try:
        for s in p.steps:
            if s.action in ("keep", "defer"):
                row(s.key, s.task, s.project_id, s.label)
            elif s.action == "delete":
                ls.delete_task(int(s.task["id"]))
                progress.deleted += 1
                progress.events.append(
                    event(
                        p.benchmark, p.kind, s.key, s.task, s.project_id, p.titles.get(s.project_id, ""), "deleted", now
                    )
                )
            else:
                assert s.wanted is not None
                stamp = ident.stamp_of(p.project)
                if stamp is None:  # a task without identity could never be verified, so never retired
                    raise ValueError(f"project {p.project.get('id')} carries no identity stamp: stamp it first")
                meta = ident.task_meta(stamp, p.benchmark, p.kind, s.key, str(s.wanted.data["revision"]))
                tid = ls.create_task(s.project_id, s.wanted.data, s.wanted.predictions, meta=meta)
                progress.done += 1
                t = {"id": tid, "data": s.wanted.data, "meta": meta}
                progress.events.append(
                    event(p.benchmark, p.kind, s.key, t, s.project_id, p.titles.get(s.project_id, ""), s.label, now)
                )
                row(s.key, t, s.project_id, s.label)
            counts[s.label] += 1
    except ReviewServerDown as exc:
        if isinstance(exc, PushInterrupted):
            raise
        raise PushInterrupted(progress, exc) from exc
    return pd.DataFrame(rows, columns=TASK_COLUMNS), counts


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
    """One kind's push in one call (the human baseline's; the review loop plans and executes
    itself, with the ledger): bring ``project`` (and the projects of ``kind`` named in
    ``previous``) in line with ``wanted``. Returns the task rows and counts by action."""
    prev = previous[previous["kind"] == kind] if len(previous) else previous
    project = ident.ensure_stamp(ls, project)
    pids = {int(project["id"]), *(int(pid) for pid in (prev["project_id"] if len(prev) else []))}
    seen = {(str(r.item_id), str(r.revision)) for r in prev.itertuples()} if len(prev) else set()
    titles = {int(r.project_id): str(r.project_title) for r in prev.itertuples()} if len(prev) else {}
    rows = prev.assign(task_key=prev["item_id"].astype(str)) if len(prev) else prev
    v = view(ls, [benchmark], rows, {kind: pids})
    pl = plan(benchmark, kind, project, wanted, v.ours[kind], recorded, keep, seen, titles)
    out, counts = execute(ls, pl, Progress(pl.creations()))
    if v.foreign:  # tasks in the projects looked at that are not provably this push's: left alone
        counts["not_ours"] = len(v.foreign)
    return out, counts


def poll(
    ls: LabelStudio, task_rows: pd.DataFrame, kinds: tuple[str, ...]
) -> tuple[dict[str, list[tuple[int, list[dict[str, Any]]]]], set[int]]:
    """kind → [(project id, its own tasks with annotations)], and the ids of those live tasks.
    ``task_rows``: ``review_tasks`` or ledger rows (their ``benchmark``, ``kind`` and
    ``project_id``); only tasks provably theirs are read (``ownership.sort_out``)."""
    out: dict[str, list[tuple[int, list[dict[str, Any]]]]] = {k: [] for k in kinds}
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


def unread(by_kind: Mapping[str, list[tuple[int, list[dict[str, Any]]]]], verdicts: pd.DataFrame) -> list[str]:
    """``<project>:<annotation>@<updated>`` of each submitted annotation the verdicts table does
    not hold at that version (new, or changed since it was read): what the next read takes in. A
    skip counts too: the read records it (``skipped``) and sends it back to its reviewer. An
    annotation is the recorded one only with the same creation time (a replaced database reuses ids)."""
    have: dict[str, Any] = {}
    if len(verdicts):
        # a unit task's annotation has one row per member
        keys = [
            f"{annotation_ref(v)}@{_when(c)}"
            for v, c in zip(verdicts["verdict_id"], verdicts["created_at"], strict=True)
        ]
        have = dict(zip(keys, verdicts["updated_at"], strict=True))
    out = []
    for projects in by_kind.values():
        for pid, ts in projects:
            for t in ts:
                for a in t.get("annotations") or []:
                    vid, upd = f"{pid}:{a['id']}", a.get("updated_at")
                    rec = have.get(f"{vid}@{_when(a.get('created_at'))}")
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
