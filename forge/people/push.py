"""Pushing tasks to Label Studio, idempotently: "push what has no task yet". Dagster-free.

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
* on object storage a kept task whose pre-signed media URLs are about to expire gets fresh ones
  (``resign``: its ``data`` updated in place, its annotations untouched);
* a task of a key no longer wanted is deleted on the same condition.

Rows of the ``review_tasks`` table describe the live tasks after the push; every task created
or deleted becomes a ledger event (``forge/people/ledger.py``). ``push`` does it all in one call;
``add_new`` is the push of clients whose tasks are never replaced (protocol steps, judge
validation): a task for each wanted key that has none yet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from forge.people import identity as ident
from forge.people import ledger, ownership, read, resign
from forge.people.client import LabelStudio, ReviewServerDown, task_payload

# tasks per import request: one request per task cost MAIA's first push (864 tasks) a minute; a
# batch is created whole or not at all (Label Studio imports in one transaction)
IMPORT_BATCH = 100

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
COUNTS = ("kept", "created", "recreated", "moved", "replaced", "deleted", "deferred")


@dataclass
class Wanted:
    data: dict[str, Any]  # task data (``item_id`` and ``revision`` included; ``task_key`` when not the item)
    predictions: list[dict[str, Any]] = field(default_factory=list)


task_key = ownership.task_key
_rev = ownership.revision


# -- plan and execute ----------------------------------------------------------------------------


@dataclass
class Step:
    action: str  # keep | create | delete | defer
    label: str  # the review_tasks action / the count it adds to
    key: str
    project_id: int
    task: dict[str, Any] = field(default_factory=dict)  # the live task (keep / delete / defer)
    wanted: Wanted | None = None  # what to create
    renew: dict[str, Any] | None = None  # a kept task's data with its due pre-signed URLs renewed


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
    now: datetime | None = None,
) -> Plan:
    """What a push of ``kind`` does (module doc): ``tasks`` are the live tasks of the kind's
    projects; ``known`` the (key, revision) pairs a push made before (a missing one is recreated);
    ``now``: the time a kept task's pre-signed URLs are judged against (``resign``)."""
    main = int(project["id"])
    have: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for pid, ts in tasks.items():
        for t in ts:
            have.setdefault(task_key(t), []).append((pid, t))
    steps: list[Step] = []

    def retire(key: str, pid: int, t: dict[str, Any], label: str) -> None:
        done = read.recorded(t, pid, recorded)  # annotations not yet read back: deleted by a later push
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
            pid, t = current[0]
            steps.append(Step("keep", "kept", key, pid, t, renew=resign.renewed(t.get("data"), w.data, now)))
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

    pending: list[Step] = []  # creations waiting for their import request

    def create() -> None:
        stamp = ident.stamp_of(p.project)
        if stamp is None:  # a task without identity could never be verified, so never retired
            raise ValueError(f"project {p.project.get('id')} carries no identity stamp: stamp it first")
        metas = [ident.task_meta(stamp, p.benchmark, p.kind, s.key, str(s.wanted.data["revision"])) for s in pending]
        payloads = [task_payload(s.wanted.data, s.wanted.predictions, m) for s, m in zip(pending, metas, strict=True)]
        ids = ls.create_tasks(pending[0].project_id, payloads)
        for s, meta, tid in zip(pending, metas, ids, strict=True):
            progress.done += 1
            t = {"id": tid, "data": s.wanted.data, "meta": meta}
            title = p.titles.get(s.project_id, "")
            progress.events.append(ledger.event(p.benchmark, p.kind, s.key, t, s.project_id, title, s.label, now))
            row(s.key, t, s.project_id, s.label)
            counts[s.label] += 1
        pending.clear()

    try:
        for s in p.steps:
            if s.action == "create":
                assert s.wanted is not None
                if pending and (len(pending) >= IMPORT_BATCH or pending[0].project_id != s.project_id):
                    create()
                pending.append(s)
                continue
            if pending:  # rows stay in the plan's order
                create()
            if s.action in ("keep", "defer"):
                if s.renew is not None:  # fresh media URLs; the task, its identity and its annotations stay
                    ls.update_task_data(int(s.task["id"]), s.renew)
                    counts["resigned"] = counts.get("resigned", 0) + 1
                row(s.key, s.task, s.project_id, s.label)
            elif s.action == "delete":
                ls.delete_task(int(s.task["id"]))
                progress.deleted += 1
                progress.events.append(
                    ledger.event(
                        p.benchmark, p.kind, s.key, s.task, s.project_id, p.titles.get(s.project_id, ""), "deleted", now
                    )
                )
            counts[s.label] += 1
        if pending:
            create()
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
    v = read.view(ls, [benchmark], rows, {kind: pids})
    pl = plan(benchmark, kind, project, wanted, v.ours[kind], recorded, keep, seen, titles)
    out, counts = execute(ls, pl, Progress(pl.creations()))
    if v.foreign:  # tasks in the projects looked at that are not provably this push's: left alone
        counts["not_ours"] = len(v.foreign)
    return out, counts


def add_new(
    own: ident.Owner, wanted: Mapping[str, Wanted], order: Callable[[list[str]], list[str]] | None = None
) -> list[str]:
    """A task, with its identity, for each wanted key that has none of ``own``'s yet in its project,
    made in the order ``order`` gives the new keys (default: ``wanted``'s); tasks already there are
    left as they are, but for pre-signed media URLs about to expire (renewed: ``resign``; counted
    in ``own.resigned``). Returns the keys pushed, in that order."""
    live = own.tasks()
    have = {own.key(t) for t in live}
    own.resigned = 0
    for t in live:
        fresh = wanted.get(own.key(t))
        renew = resign.renewed(t.get("data"), fresh.data) if fresh is not None else None
        if renew is not None:
            own.ls.update_task_data(int(t["id"]), renew)
            own.resigned += 1
    new = [k for k in wanted if k not in have]
    new = order(new) if order else new
    for i in range(0, len(new), IMPORT_BATCH):
        own.create_many([(wanted[k].data, wanted[k].predictions or None) for k in new[i : i + IMPORT_BATCH]])
    return new
