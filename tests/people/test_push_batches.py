"""Pushes create tasks in batches (one import request per ``push.IMPORT_BATCH`` tasks), and every id
Label Studio hands back lands on the task it was made for (a real Label Studio: the session server)."""

from __future__ import annotations

import pandas as pd

from forge.people import identity as ident
from forge.people import project, push
from forge.people.client import LabelStudio
from forge.people.push import TASK_COLUMNS, Wanted

CONFIG = '<View><Text name="text" value="$text"/><Choices name="c" toRequire="true" toName="text">' + (
    '<Choice value="yes"/><Choice value="no"/></Choices></View>'
)


def _counting(monkeypatch) -> list[int]:
    sizes: list[int] = []
    real = LabelStudio.create_tasks

    def counted(self, project_id, tasks):
        sizes.append(len(tasks))
        return real(self, project_id, tasks)

    monkeypatch.setattr(LabelStudio, "create_tasks", counted)
    monkeypatch.setattr(push, "IMPORT_BATCH", 2)
    return sizes


def test_push_and_add_new_import_in_batches_and_ids_name_their_tasks(review_env, monkeypatch):
    _data, ls, _srv, _configure = review_env
    sizes = _counting(monkeypatch)
    p = project.ensure(ls, "Batch push · test", CONFIG, project.settings(1, "batches"))
    wanted = {f"i{n}": Wanted({"item_id": f"i{n}", "revision": "r1", "text": f"item {n}"}) for n in range(5)}
    rows, counts = push.push(ls, "test", "review", p, wanted, pd.DataFrame(columns=TASK_COLUMNS), set())
    assert sizes == [2, 2, 1] and counts["created"] == 5
    # each row's task id is the tool's task of that item, whose identity names it
    tool = {int(t["id"]): t for t in ls.tasks(int(p["id"]))}
    assert set(tool) == set(rows["task_id"])
    stamp = ident.stamp_of(ls.request("GET", f"/api/projects/{p['id']}"))
    for r in rows.itertuples():
        t = tool[int(r.task_id)]
        assert t["data"]["item_id"] == r.item_id
        assert ident.check(t, stamp, "test", "review", r.item_id, "r1") is None

    # a second push changes nothing: the batches made exactly one task per item
    sizes.clear()
    _rows, again = push.push(ls, "test", "review", p, wanted, rows, set())
    assert sizes == [] and again["kept"] == 5 and again["created"] == 0

    # the add-only push (protocol steps, judge validation) batches the same way
    q = project.ensure(ls, "Batch add · test", CONFIG, project.settings(1, "batches"))
    own = ident.Owner(ls, int(q["id"]), "test", "step", "unit_id")
    new = {f"u{n}": Wanted({"unit_id": f"u{n}", "text": f"unit {n}"}) for n in range(3)}
    assert push.add_new(own, new) == ["u0", "u1", "u2"] and sizes == [2, 1]
    assert sorted(own.key(t) for t in own.tasks()) == ["u0", "u1", "u2"] and own.others == 0
    assert push.add_new(own, new) == [] and sizes == [2, 1]
