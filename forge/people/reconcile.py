"""The catalog and the tool compared both ways, before every push of the review loop: tasks the
ledger does not know are adopted, tasks gone from the tool recorded missing (the next push makes
them again), tasks of a database the tool no longer runs recorded lost; and a row of the
reconciliation table (``review_reconciliation``) whenever they disagreed. Nothing is ever deleted
for a disagreement. Dagster-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from forge.people import ledger, ownership, read
from forge.storage import TableStore

COLUMNS = [
    "benchmark",
    "recorded_at",
    "state",
    "catalog_instance",
    "tool_instances",
    "adopted",
    "missing",
    "lost",
    "foreign",
    "message",
]


def reconcile(
    benchmark: str, book: pd.DataFrame, v: read.View, titles: Mapping[int, str]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The catalog (``book``, the benchmark's ledger) and the tool compared both ways: ledger events for the benchmark's own live
    tasks the ledger does not know (``adopted``: made by a push that was killed, or found again in
    a restored database), for tasks it should have but does not (``missing``, once per task: the
    next push recreates them), and for tasks made in a database the tool no longer runs (``lost``,
    once: their verdicts keep counting, their open keys are pushed again); and the figures of the
    reconciliation (``review_reconciliation``). Nothing is deleted for a disagreement."""
    now = pd.Timestamp(datetime.now(UTC))
    known = set(ledger.refs(book, (*ledger.MADE, *ledger.GONE)))
    out = []
    for kind, projects in v.ours.items():
        for pid, ts in projects.items():
            for t in ts:
                if ownership.task_ref(t) not in known:
                    out.append(
                        ledger.event(
                            benchmark, kind, ownership.task_key(t), t, pid, titles.get(pid, ""), "adopted", now
                        )
                    )
    state, before = ledger.instance_state(book, v.instances)
    pushed = ledger.pushed(book)
    last = book.assign(ref=ownership.row_refs(book)).drop_duplicates("ref", keep="last") if len(book) else book
    live, missing = v.live_refs(), set(ledger.refs(book, ("missing",)))
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
        out.append(ledger.event(benchmark, r.kind, str(r.task_key), t, int(r.project_id), r.project_title, name, now))
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


def table(store: TableStore, table: str, name: str, figures: Mapping[str, Any]) -> tuple[pd.DataFrame, str | None]:
    """The benchmark's reconciliation table with this push's row added when the catalog and the
    tool disagreed (a replaced database, tasks adopted, missing, lost, or foreign tasks in projects
    the catalog named), and the message that says so (None when they agreed)."""
    old = (
        store.read(table, parts=[name])
        if store.exists(table) and name in store.parts(table)
        else pd.DataFrame(columns=COLUMNS)
    )
    msg = message(name, figures)
    if msg is None:
        return old, None
    row = {k: figures.get(k) for k in COLUMNS if k in figures}
    row |= {"benchmark": name, "recorded_at": pd.Timestamp.now(tz="UTC"), "message": msg}
    row["tool_instances"] = ",".join(figures.get("tool_instances") or [])
    new = pd.DataFrame([row], columns=COLUMNS)
    return pd.concat([f for f in (old, new) if len(f)], ignore_index=True), msg


def message(name: str, f: Mapping[str, Any]) -> str | None:
    parts = []
    if f.get("state") == "replaced":
        parts.append(
            f"Label Studio's database was replaced (the catalog's tasks were made in instance "
            f"{str(f.get('catalog_instance'))[:8]}, which no project in the tool carries now): "
            f"{f.get('lost', 0)} tasks recorded lost (their verdicts stand), open items pushed again"
        )
    if f.get("adopted"):
        parts.append(f"{f['adopted']} tasks of {name} found in the tool that the catalog did not list: adopted")
    if f.get("missing"):
        parts.append(f"{f['missing']} tasks gone from the tool (deleted there): pushed again")
    if f.get("lost") and f.get("state") != "replaced":
        parts.append(f"{f['lost']} tasks recorded lost with an earlier database")
    if f.get("foreign"):
        parts.append(
            f"{f['foreign']} tasks in projects the catalog named are not provably {name}'s "
            "(another benchmark's, another database's, or made by hand): left alone"
        )
    return f"{name}: " + "; ".join(parts) if parts else None
