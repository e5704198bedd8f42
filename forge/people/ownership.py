"""Which live Label Studio tasks a push or a read of one benchmark may treat as its own,
Dagster-free (docs/review.md, "Identity and reconciliation"; ``forge/people/identity.py``).

A task is the benchmark's own, for a kind, when

* its identity (task ``meta``) names the stamp of the project it lives in, the benchmark, the kind,
  and the key and revision its data shows; or
* it carries no identity (made before identities) and the catalog recorded exactly that project id
  and task id for the same key and revision, and its data names no other benchmark.

Every other task in a project the catalog named is *foreign*: never deleted, replaced, adopted or
read, only reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from forge.people import identity as ident
from forge.people.identity import Stamp

MADE = ("created", "recreated", "moved", "adopted")  # ledger events of a task a push made or found


def task_key(task: Mapping[str, Any]) -> str:
    data = task.get("data") or {}
    return str(data.get("task_key") or data.get("item_id"))


def revision(task: Mapping[str, Any]) -> str:
    return str((task.get("data") or {}).get("revision"))


def ref(task_id: Any, task_uid: Any) -> str:
    """How the catalog names a task across databases: its identity's random id, or ``#<task id>``
    for a task made before identities (ids alone are only meaningful in one database)."""
    return str(task_uid) if isinstance(task_uid, str) and task_uid else f"#{int(task_id)}"


def task_ref(task: Mapping[str, Any]) -> str:
    return ref(task["id"], ident.uid(task))


def row_refs(rows: pd.DataFrame) -> list[str]:
    uids = rows["task_uid"] if "task_uid" in rows else [None] * len(rows)
    return [ref(t, u) for t, u in zip(rows["task_id"], uids, strict=True)]


def _legacy(rows: pd.DataFrame, kind: str) -> dict[tuple[int, int], tuple[str, str] | None]:
    """(project id, task id) → (key, revision) recorded for tasks without identity (None: the
    rows record no key, as ``review_tasks`` does)."""
    out: dict[tuple[int, int], tuple[str, str] | None] = {}
    for r in rows.to_dict("records") if len(rows) else []:
        uid = r.get("task_uid")
        if r.get("kind", kind) != kind or r.get("event", "created") not in MADE or (isinstance(uid, str) and uid):
            continue
        key = r.get("task_key")
        out[(int(r["project_id"]), int(r["task_id"]))] = (str(key), str(r["revision"])) if key is not None else None
    return out


@dataclass
class Sorted:
    ours: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # project id → the push's own tasks
    foreign: list[dict[str, Any]] = field(default_factory=list)  # kind, project_id, task_id, why


def sort_out(
    kind: str,
    tasks: Mapping[int, list[dict[str, Any]]],
    stamps: Mapping[int, Stamp | None],
    benchmarks: Iterable[str],
    rows: pd.DataFrame,
) -> Sorted:
    """The live ``tasks`` (project id → tasks) split into the benchmark's own of ``kind`` and the
    rest; ``rows``: the catalog's records of the benchmark's tasks (ledger or ``review_tasks``)."""
    names = {str(b) for b in benchmarks}
    legacy = _legacy(rows, kind)
    out = Sorted()
    for pid, ts in tasks.items():
        mine = out.ours.setdefault(int(pid), [])
        for t in ts:
            key, rev = task_key(t), revision(t)
            whys = [ident.check(t, stamps.get(int(pid)), b, kind, key, rev) for b in sorted(names)] or ["no_owner"]
            why = None if None in whys else whys[0]
            if why == "no_identity":
                said = (t.get("data") or {}).get("benchmark")
                rec = legacy.get((int(pid), int(t["id"])), "absent")
                if rec != "absent" and (rec is None or rec == (key, rev)) and (not said or said in names):
                    why = None
                else:
                    why = "no_identity: not a task the catalog recorded here"
            if why is None:
                mine.append(t)
            else:
                out.foreign.append({"kind": kind, "project_id": int(pid), "task_id": int(t["id"]), "why": why})
    return out
