"""The task ledger: every task a push made or found (``created``, ``recreated``, ``moved``,
``adopted``), deleted itself (``deleted``), found gone from the tool (``missing``) or made in a
database the tool no longer runs (``lost``). Append-only, one file per benchmark (the review loop's
``review_task_ledger``). Dagster-free.

A task is its id and its identity (``forge/people/identity.py``): a replaced database hands out the
same ids again, so the ledger's refs (``ownership.ref``) carry the task's random uid.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from forge.people import identity as ident
from forge.people import ownership
from forge.storage import TableStore
from forge.storage.contracts import load_contract

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


def empty() -> pd.DataFrame:
    return pd.DataFrame(columns=LEDGER_COLUMNS)


def refs(ledger: pd.DataFrame, events: Iterable[str]) -> dict[str, int]:
    """ref → task id of the ledger's rows of ``events`` (``ownership.ref``)."""
    if not len(ledger):
        return {}
    rows = ledger.loc[ledger["event"].isin(list(events))]
    return dict(zip(ownership.row_refs(rows), rows["task_id"].astype(int), strict=True))


def pushed(ledger: pd.DataFrame) -> dict[str, int]:
    """ref → task id of every task made and not gone since."""
    gone = refs(ledger, GONE)
    return {r: t for r, t in refs(ledger, MADE).items() if r not in gone}


def pushed_ids(ledger: pd.DataFrame, instances: set[str] | None = None) -> set[int]:
    """Tasks a push made or adopted and never deleted itself, in the database the tool runs now
    (a task ``lost`` with a replaced database is not counted; with ``instances``, the instance ids
    the tool's projects carry, neither is one made in another instance and not yet recorded lost):
    the tool should have each of them."""
    made = pushed(ledger)
    if instances is None or not made:
        return set(made.values())
    rs = ownership.row_refs(ledger)
    elsewhere = {
        r for r, i in zip(rs, ledger["instance"], strict=True) if isinstance(i, str) and i and i not in instances
    }
    return {t for r, t in made.items() if r not in elsewhere}


def unacknowledged(ledger: pd.DataFrame, live: set[str]) -> set[int]:
    """Tasks the tool should have, does not (``live``: refs of the benchmark's own live tasks), and
    no push has noted missing yet (the next push recreates their keys)."""
    missing = refs(ledger, ("missing",))
    return {t for r, t in pushed(ledger).items() if r not in missing and r not in live}


def projects(ledger: pd.DataFrame, kind: str) -> set[int]:
    """The projects of ``kind`` where the ledger expects tasks of its own (tasks deleted or lost
    name projects that another database may have given the same id)."""
    if not len(ledger):
        return set()
    made = set(pushed(ledger))
    rows = ledger[(ledger["kind"] == kind) & pd.Series(ownership.row_refs(ledger), index=ledger.index).isin(made)]
    return {int(p) for p in rows["project_id"]}


def event(
    benchmark: str, kind: str, key: str, task: Mapping[str, Any], pid: int, title: str, name: str, at: Any
) -> dict[str, Any]:
    """One ledger row: ``task`` (with its identity, or ``instance`` / ``task_uid`` of its own) had
    event ``name`` in project ``pid`` at ``at``."""
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


def seed(task_rows: pd.DataFrame, kinds: Iterable[str]) -> pd.DataFrame:
    """A ledger for tasks pushed before the ledger existed: each recorded task ``adopted``."""
    rows = task_rows[task_rows["kind"].isin(list(kinds))] if len(task_rows) else task_rows
    if not len(rows):
        return empty()
    out = rows.assign(task_key=rows["item_id"].astype(str), event="adopted", recorded_at=rows["pushed_at"])
    return out.assign(instance="", task_uid="").reindex(columns=LEDGER_COLUMNS).reset_index(drop=True)


def instance_state(ledger: pd.DataFrame, tool: set[str]) -> tuple[str, str]:
    """(state, the instance the catalog's live tasks were made in): ``new`` when the catalog holds
    no live task with identity, ``same`` when the tool's projects carry their instance,
    ``replaced`` when some were made in an instance no project in the tool carries now (the
    database was replaced or re-created, or every Subtext Forge project deleted in the tool) and
    are not yet recorded ``lost``."""
    made = pushed(ledger)
    rows = ledger.assign(ref=ownership.row_refs(ledger)) if len(ledger) else ledger
    live = rows[rows["ref"].isin(list(made)) & rows["event"].isin(MADE)] if len(rows) else rows
    seen = [str(i) for i in live["instance"] if isinstance(i, str) and i] if len(live) else []
    gone = [i for i in seen if i not in tool]
    if gone:
        return "replaced", gone[-1]
    return ("same", seen[-1]) if seen else ("new", "")


# -- in the catalog ------------------------------------------------------------------------------


def load(store: TableStore, table: str, name: str, kinds: Iterable[str], tasks: str = "review_tasks") -> pd.DataFrame:
    """The benchmark's ledger (file ``name`` of ``table``); before the ledger existed, seeded from
    the ``tasks`` table (each recorded task of ``kinds`` adopted), so earlier pushes keep counting."""
    if store.exists(table) and name in store.parts(table):
        out = store.read(table, parts=[name]).reindex(columns=LEDGER_COLUMNS)
        for c in ("instance", "task_uid"):  # rows from before identities have none
            out[c] = out[c].where(out[c].map(lambda v: isinstance(v, str)), "")
        return out
    prev = store.read(tasks, parts=[name]) if store.exists(tasks) else pd.DataFrame()
    prev = prev[prev["benchmark"] == name] if len(prev) else prev
    return seed(prev, kinds)


def append(ledger: pd.DataFrame, events: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """The ledger with ``events`` added at the end (an event already recorded is not added twice)."""
    new = pd.DataFrame(list(events), columns=LEDGER_COLUMNS)
    if not len(new):
        return ledger if len(ledger) else empty()
    frames = [f for f in (ledger.reindex(columns=LEDGER_COLUMNS), new) if len(f)]
    out = pd.concat(frames, ignore_index=True)
    out["task_id"] = out["task_id"].astype("int64")
    out[["instance", "task_uid"]] = out[["instance", "task_uid"]].fillna("")
    # a task is its id and its identity: a replaced database reuses ids
    return out.drop_duplicates(["task_id", "task_uid", "event"], keep="first").reset_index(drop=True)


def write(store: TableStore, table: str, name: str, ledger: pd.DataFrame) -> None:
    """Write the ledger now (a push that Label Studio interrupted: the asset writes nothing else)."""
    contract = load_contract(table)
    df = contract.conform(ledger)
    problems = contract.validate(df)
    if problems:
        raise ValueError(f"{table} [{name}]: " + "; ".join(problems[:5]))
    store.write(table, df, name, schema=contract.arrow_schema())
