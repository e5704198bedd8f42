"""Which live tasks a push may treat as its own (forge/people/ownership.py): only those whose
identity names the project's stamp, the benchmark, the kind, the key and the revision; a task
without identity only where the catalog recorded exactly it."""

from __future__ import annotations

import pandas as pd

from forge.people import identity as ident
from forge.people import read
from forge.people.ownership import sort_out


def _task(tid: int, key: str, meta: dict | None, benchmark: str = "maia") -> dict:
    return {"id": tid, "data": {"item_id": key, "revision": "r1", "benchmark": benchmark}, "meta": meta or {}}


def _ledger(rows: list[tuple[int, int, str]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"kind": "review", "project_id": p, "task_id": t, "task_key": k, "revision": "r1", "event": "created"}
            | {"task_uid": ""}
            for p, t, k in rows
        ]
    )


def test_only_tasks_with_the_projects_stamp_and_the_pushs_owner_are_ours():
    stamp = ident.Stamp(ident.new_id(), ident.new_id())
    other = ident.Stamp(ident.new_id(), ident.new_id())  # a fresh database's project under the same id
    mine = _task(1, "m1", ident.task_meta(stamp, "maia", "review", "m1", "r1"))
    vague = _task(2, "v1", ident.task_meta(stamp, "vague", "review", "v1", "r1"), "vague")
    elsewhere = _task(3, "m2", ident.task_meta(other, "maia", "review", "m2", "r1"))
    changed = _task(4, "m3", ident.task_meta(stamp, "maia", "review", "m3", "r0"))
    s = sort_out("review", {5: [mine, vague, elsewhere, changed]}, {5: stamp}, ["maia"], _ledger([]))
    assert [t["id"] for t in s.ours[5]] == [1]
    assert {f["task_id"]: f["why"] for f in s.foreign} == {2: "other_owner", 3: "other_project", 4: "changed"}


def test_a_task_without_identity_is_ours_only_where_the_catalog_recorded_it():
    ledger = _ledger([(5, 1, "m1"), (5, 2, "m2")])
    recorded = _task(1, "m1", None)
    other_key = _task(2, "x9", None)  # a new database's task under a recorded id
    other_bench = _task(3, "m3", None, "vague")
    s = sort_out("review", {5: [recorded, other_key, other_bench]}, {5: None}, ["maia"], ledger)
    assert [t["id"] for t in s.ours[5]] == [1]
    assert {f["task_id"] for f in s.foreign} == {2, 3}
    # the same ids in another project (a replaced database's numbering) are not the recorded tasks
    s = sort_out("review", {6: [recorded]}, {6: None}, ["maia"], ledger)
    assert s.ours[6] == [] and len(s.foreign) == 1


def test_an_annotation_counts_as_read_only_with_its_id_and_creation_time():
    """A replaced database hands out the same annotation ids: a new annotation under a read one's
    id is not read, so its task is never retired before the read takes it in."""
    v = pd.DataFrame(
        {"verdict_id": ["5:9", "5:10:m2"], "created_at": pd.to_datetime(["2026-01-01T10:00:00Z"] * 2, utc=True)}
    )
    rec = read.recorded_keys(v)
    same = {"annotations": [{"id": 9, "created_at": "2026-01-01T10:00:00Z"}]}
    unit = {"annotations": [{"id": 10, "created_at": "2026-01-01T10:00:00.000000Z"}]}
    other = {"annotations": [{"id": 9, "created_at": "2026-03-02T08:00:00Z"}]}  # same id, another annotation
    assert read.recorded(same, 5, rec) and read.recorded(unit, 5, rec)
    assert not read.recorded(other, 5, rec) and not read.recorded(same, 6, rec)
