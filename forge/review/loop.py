"""The review loop's bookkeeping, Dagster-free (docs/review.md, "The loop"):

* the task ledger (table ``review_task_ledger``, one file per benchmark, append-only): every task
  a push made, found, deleted or found gone (``forge/people/ledger.py``);
* one Label Studio project per benchmark and kind, carried across export versions; the
  per-version projects of earlier releases (``<Title> review · <b> v<N>``) are adopted: the
  newest is renamed, the others' tasks are moved by the next push;
* verdicts that do not count (refused, or changed by someone other than their author), returned
  to their reviewer as a task in the ``returned`` project, with the reason at the top, one Data
  Manager tab per reviewer;
* what the review sensor has to do for a benchmark (``todo``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from forge.benchmarks.review_spec import ReviewSpec
from forge.benchmarks.spec import BenchmarkSpec
from forge.people import ledger, read
from forge.people.client import LabelStudio
from forge.people.push import Wanted
from forge.people.refusal import back_to
from forge.review import status, units
from forge.review.items import task_data
from forge.review.verdicts import annotation_key
from forge.storage import TableStore

LEDGER = "review_task_ledger"
RECONCILIATION = "review_reconciliation"  # forge/people/reconcile.py
KINDS = ("review", "adjudication", "returned")  # the loop's project kinds (the human baseline is apart)
RETURNED_PREFIX = "returned:"  # a returned task's key: returned:<verdict id>


def title(spec: BenchmarkSpec, kind: str) -> str:
    return f"{spec.title} {kind} · {spec.name}"


def description(spec: BenchmarkSpec, rs: ReviewSpec, kind: str) -> str:
    if kind == "returned":
        return (
            f"Subtext Forge: {spec.title} ({spec.name}) verdicts that could not be taken, returned to their "
            "reviewer. Open the tab with your name, read the reason at the top of each task, and review the "
            "item again (your new verdict replaces the returned one)."
        )
    return f"Subtext Forge {kind} of {spec.title} ({spec.name}); {rs.note}".strip()


def adopt_legacy(ls: LabelStudio, name: str) -> int | None:
    """Before one project per benchmark, every export round opened ``<name> v<N>``. When ``name``
    does not exist yet, the newest of those is renamed to it (its tasks and annotations stay where
    reviewers left them); the older ones' pending tasks are moved by the push. Returns the id."""
    projects = ls.projects()
    if any(p.get("title") == name for p in projects):
        return None
    pattern = re.compile(re.escape(name) + r" v(\d+)")
    old = [(int(m.group(1)), int(p["id"])) for p in projects if (m := pattern.fullmatch(str(p.get("title"))))]
    if not old:
        return None
    pid = max(old)[1]
    ls.request("PATCH", f"/api/projects/{pid}", json={"title": name})
    return pid


# -- the ledger ----------------------------------------------------------------------------------


def load_ledger(store: TableStore, name: str) -> pd.DataFrame:
    """The benchmark's review ledger (``forge/people/ledger.py``), seeded from ``review_tasks``
    before the ledger existed."""
    return ledger.load(store, LEDGER, name, KINDS)


# -- verdicts returned to their reviewer ---------------------------------------------------------


def _when(v: pd.DataFrame) -> pd.Series:
    return pd.to_datetime(v["updated_at"], utc=True).fillna(pd.to_datetime(v["created_at"], utc=True))


def returned(
    benchmark: str, verdicts: pd.DataFrame, items: pd.DataFrame, rs: ReviewSpec, clips: Mapping[str, str]
) -> dict[str, Wanted]:
    """``returned:<verdict id>`` → the task that returns a verdict to its reviewer with the reason
    (``forge.review.status.returned``: refused, or changed by someone other than its author, who
    gets it back): the item as it is now, the reason in the heading. Only while that person has
    given no later verdict on the item: their next verdict answers it, and the push retires the task."""
    back = status.returned(benchmark, verdicts)
    if not len(back):
        return {}
    v = verdicts[~verdicts["stale"].astype(bool)]
    when = dict(zip(v["verdict_id"].astype(str), _when(v), strict=True))
    by_id = {str(r["item_id"]): r for r in items.to_dict("records")}
    out: dict[str, Wanted] = {}
    for r in back.to_dict("records"):
        if str(r.get("why") or "").startswith("adjudicator_reviewed"):
            continue  # not theirs to answer again: another annotator adjudicates the unit
        who, what = back_to(str(r["reviewer"]), r.get("author"), _refused(v, r))
        mine = v[(v["item_id"] == r["item_id"]) & (v["reviewer"].astype(str) == who)]
        later = (_when(mine) > when.get(str(r["verdict_id"]), pd.Timestamp.min.tz_localize("UTC"))).any()
        item = by_id.get(str(r["item_id"]))
        if later or item is None:
            continue
        data = task_data(item, rs, clips.get(str(item.get("unit_id"))), "review")
        key = f"{RETURNED_PREFIX}{r['verdict_id']}"
        unit = units.unit_of_item(items, rs.unit, str(item["item_id"])) if rs.unit else None
        if unit is not None and len(unit[1]) > 1:  # a unit's annotation goes back once, as the unit's task
            key = f"{RETURNED_PREFIX}{annotation_key(str(r['verdict_id']))}"
            if key in out:
                continue
            data = units.unit_task_data(unit[0], unit[1], rs, clips.get(str(item.get("unit_id"))))
        data.update(
            {
                "task_key": key,
                "returned_to": who,
                "returned_reason": str(r["why"]),
                "returned_verdict": str(r["verdict_id"]),
                "heading": f"RETURNED to {who}: your verdict was {what} on item {item['item_id']} ({r['why']}). "
                "The item is as it is now; review it again.",
            }
        )
        out[key] = Wanted(data)
    return out


def _refused(v: pd.DataFrame, r: Mapping[str, Any]) -> bool:
    row = v[v["verdict_id"] == r["verdict_id"]]
    return bool(len(row)) and bool(((row["verdict"] == "refused") | (row["edit_status"] == "refused")).any())


def reviewer_tabs(ls: LabelStudio, project_id: int, wanted: Mapping[str, Wanted]) -> list[str]:
    """One Data Manager tab per reviewer with returned tasks ("Returned to <e-mail>"); Label Studio's
    tabs are shared by the organisation, so each reviewer finds theirs."""
    people = sorted({str(w.data.get("returned_to")) for w in wanted.values()})
    for who in people:
        ls.ensure_view(
            project_id,
            f"Returned to {who}",
            [{"filter": "filter:tasks:data.returned_to", "operator": "equal", "type": "String", "value": who}],
        )
    return people


# -- what the sensor has to do -------------------------------------------------------------------


def todo(ls: LabelStudio, store: TableStore, name: str) -> list[str]:
    """Why the benchmark's loop needs a run (read, then push), each reason with the detail that
    changes when the situation does (the sensor hashes them); [] when the tool, the verdicts and
    the pushed tasks agree. Items with no push yet count; a policy of ``off`` is the caller's."""
    gated = store.exists("gated_items") and name in store.parts("gated_items")
    pushed_once = store.exists("review_tasks") and name in store.parts("review_tasks")
    if not pushed_once:
        return ["first push"] if gated else []
    book = load_ledger(store, name)
    if not len(book):
        return []
    seen = read.view(ls, [name], book, {k: ledger.projects(book, k) for k in KINDS})
    by_kind = {k: list(ps.items()) for k, ps in seen.ours.items()}
    v = store.read("verdicts", parts=[name]) if store.exists("verdicts") and name in store.parts("verdicts") else None
    out = [f"unread {a}" for a in read.unread(by_kind, v if v is not None else pd.DataFrame())]
    state, before = ledger.instance_state(book, seen.instances)
    if state == "replaced":  # the push re-adopts what is there and records the lost tasks
        out.append(f"Label Studio database replaced: instance {before[:8]} is gone")
    else:
        out += [f"deleted in the tool: task {t}" for t in sorted(ledger.unacknowledged(book, seen.live_refs()))]
    return out
