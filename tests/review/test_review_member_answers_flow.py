"""A unit answer where the form expects member answers, on a real Label Studio (issue #55, point 5):
an accept posted to a Hummus pair's task with no member answers is refused for each of its members
with the reason (``member_unanswered``), the task goes back to its reviewer, and none of the pair
reaches the export; answering every member in the returned task is what exports it."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from assets.people.factory import people_defs
from forge.benchmarks.registry import get
from forge.export.stages import run_export
from forge.review import loop
from forge.splits.config import stage_settings
from forge.storage import TableStore
from tests.recipes.hummus.test_hummus_review_edits import pair
from tests.review import scripted as sr
from tests.review import world
from tests.review.test_review_flow import _export_lines, _resources, q

pytestmark = pytest.mark.slow  # a real Label Studio server (shared by the session's review tests)


def _mat(data, keys: list[str]) -> dg.ExecuteInProcessResult:
    return dg.materialize(list(people_defs("hummus", "review").assets), selection=keys, resources=_resources(data))


def _only_task(ls, kind: str) -> dict:
    (task,) = ls.tasks(ls.project_by_title(loop.title(get("hummus"), kind))["id"])
    return task


def test_an_accept_posted_to_a_hummus_unit_is_refused_for_its_members_and_never_exported(review_env):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  hummus: {reviewers: 1}\n")
    store = TableStore(data)
    world.image(data, "img_p1", (200, 120, 40), size=(200, 100))
    items = pair("Yes").assign(group_id="g_img_p1", reshuffled=False, blind_trials=None, lineage=None)
    world.write_gated(store, "hummus", items.to_dict("records"))
    _mat(data, ["hummus_review_tasks"])
    task = _only_task(ls, "review")
    assert len(task["data"]["members"]) == 6  # the pair: its Classification and 5 detail items
    alice = sr.reviewer(ls, "alice@team.test")
    sr.annotate(alice, task, sr.ACCEPT, 40)  # HTTP 201: the tool takes a unit accept alone

    res = _mat(data, ["hummus_review_results"])
    v = q(data, "select * from verdicts where benchmark = 'hummus'")
    assert len(v) == 6 and set(v.verdict) == {"refused"} and set(v.reviewer) == {"alice@team.test"}
    assert all(r.startswith("member_unanswered: member ") for r in v.refusal), list(v.refusal)
    status = q(data, "select * from review_status where current")
    assert "accepted" not in set(status.status) and set(status.export) == {"held_back"}
    assert res.asset_materializations_for_node("hummus_review_results")[0].metadata["accepted"].value == 0

    spec = get("hummus")
    run_export(store, spec, stage_settings(spec), force_stub=False)
    assert not sorted((data / "exports" / "hummus").glob("v*"))  # required, none accepted: no version

    _mat(data, ["hummus_review_tasks"])  # the unit goes back to alice once, for the missing answers
    back = _only_task(ls, "returned")
    assert back["data"]["returned_to"] == "alice@team.test" and len(back["data"]["members"]) == 6
    assert "member_unanswered" in back["data"]["returned_reason"]
    answers = [sr.member(i, "verdict", "accept") for i in range(len(back["data"]["members"]))]
    sr.annotate(alice, back, [*sr.ACCEPT, *answers], 60)
    _mat(data, ["hummus_review_results"])
    status = q(data, "select * from review_status where current")
    assert set(status.status) == {"accepted"} and len(status) == 6
    run_export(store, spec, stage_settings(spec), force_stub=False)
    exported = {json.loads(line)["item_id"] for line in _export_lines(data, "hummus")}
    assert exported == set(items["item_id"])  # answered member by member: the pair goes out whole
