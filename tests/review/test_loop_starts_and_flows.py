"""The people's loop starts by itself and hands results on (issue #53), on a real Label Studio with
scripted people and the sensors evaluated directly:

* a build made while Label Studio was down recorded empty review tasks: once it is up, ONE people
  sensor tick pushes them (no hand-run build);
* a dispute reaches adjudication within a tick and one short run (the time from the second
  reviewer's submit to the adjudication task, median and worst, printed);
* people drop an image at II-Bench inspection: the people sensor reads it, then asks for
  ``iibench_labels`` (and ``iibench_items``) of that batch, which leave the image out with a
  ``rejects`` row naming who dropped it.
"""

from __future__ import annotations

import json
import os
import statistics
import time

import dagster as dg
import pytest

from assets.people.factory import people_defs
from forge.benchmarks.registry import get
from forge.review import loop
from forge.storage import TableStore
from resources.llm import LLMResource
from resources.review import ReviewResource
from resources.storage import StorageResource
from sensors.people import people_sensor
from tests.protocol import helpers as h
from tests.recipes.iibench.test_iibench_assets import BATCH, _frames
from tests.recipes.iibench.test_iibench_protocol import responder
from tests.review import scripted as sr
from tests.review import world

pytestmark = pytest.mark.slow  # a real Label Studio server

DOWN = ReviewResource(url="http://127.0.0.1:9", token="t")  # nothing listens there


def _res(data, review: ReviewResource | None = None) -> dict:
    return {"storage": StorageResource(data_dir=str(data)), "review": review or ReviewResource()}


def _review_tick(data, instance, cursor=None, review=None) -> dg.SensorResult:
    return people_sensor(dg.build_sensor_context(instance=instance, cursor=cursor, resources=_res(data, review)))


def _review_run(data, instance, keys, review=None) -> dg.ExecuteInProcessResult:
    assets = list(people_defs("vague", "review").assets)
    llm = LLMResource(backend="stub", cache_path=str(data / "cache" / "llm_cache.sqlite"))
    return dg.materialize(assets, selection=keys, resources={**_res(data, review), "llm": llm}, instance=instance)


def _titles(ls, spec, kind) -> dict[str, dict]:
    p = ls.project_by_title(loop.title(spec, kind))
    return {} if p is None else {t["data"]["item_id"]: t for t in ls.tasks(p["id"])}


def test_a_build_made_with_label_studio_down_is_pushed_by_the_next_tick(review_env):
    data, ls, _srv, configure = review_env
    configure("benchmarks:\n  vague: {policy: advisory, reviewers: 2}\n")
    store = TableStore(data)
    world.vague(store, n=3)
    vague = get("vague")
    instance = dg.DagsterInstance.ephemeral()

    # the build, Label Studio down: the push completes with its note and records an empty part
    _review_run(data, instance, ["vague_review_results", "vague_review_tasks"], review=DOWN)
    assert store.read("review_tasks", parts=["vague"]).empty
    down = _review_tick(data, instance, review=DOWN)
    assert not down.run_requests and "make review" in down.skip_reason.skip_message

    # Label Studio up: the next tick asks for the push, one run puts every item in front of people
    up = _review_tick(data, instance, down.cursor)
    (req,) = up.run_requests
    assert {k.to_user_string() for k in req.asset_selection} == {"vague_review_results", "vague_review_tasks"}
    assert req.tags["subtext/queue"] == "loop"  # the loop's own run queue (.dagster_home/dagster.yaml)
    _review_run(data, instance, list(req.asset_selection))
    assert sorted(_titles(ls, vague, "review")) == ["v1", "v2", "v3"]
    assert not _review_tick(data, instance, up.cursor).run_requests  # pushed: nothing more to do

    # seconds, not minutes: a dispute reaches adjudication within a tick and one run
    r1, r2 = sr.reviewer(ls, "r1@flow.test"), sr.reviewer(ls, "r2@flow.test")
    cursor, waits = up.cursor, []
    for item in ["v1", "v2", "v3"][: int(os.environ.get("SUBTEXT_LOOP_ROUNDS", "2"))]:
        task = _titles(ls, vague, "review")[item]
        sr.submit(ls, task, r1, [sr.choice("verdict", "accept")])
        sr.submit(ls, task, r2, sr.reject("wrong_gold"))
        t0 = time.monotonic()
        t = _review_tick(data, instance, cursor)
        (req,) = t.run_requests
        _review_run(data, instance, list(req.asset_selection))
        assert item in _titles(ls, vague, "adjudication")
        waits.append(time.monotonic() - t0)
        cursor = t.cursor
    print(f"submit → adjudication task: median {statistics.median(waits):.1f} s, worst {max(waits):.1f} s")
    assert max(waits) < 60


def _protocol_tick(data, instance, cursor) -> dg.SensorResult:
    return people_sensor(dg.build_sensor_context(instance=instance, cursor=cursor, resources=_res(data)))


def _run_all(data, instance, llm, result: dg.SensorResult) -> list[dg.RunRequest]:
    """Every run a protocol tick asked for, as the daemon would launch it: the step's push and read,
    and the recipe stages that read the step (one batch each)."""
    from assets.recipes.iibench import assets as A

    for req in result.run_requests or []:
        keys = [k.to_user_string() for k in req.asset_selection]
        if req.partition_key is None:
            assets = list(people_defs("iibench", "step").assets)
            dg.materialize(assets, selection=keys, resources=_res(data), instance=instance)
            continue
        dg.materialize(
            [A.iibench_implication, A.iibench_labels, A.iibench_items],
            selection=keys,
            partition_key=req.partition_key,
            instance=instance,
            resources={**_res(data), "llm": llm},
            run_config={"ops": {"iibench_labels": {"config": {"min_explanation_chars": 20}}}},
        )
    return list(result.run_requests or [])


def test_an_image_dropped_at_inspection_leaves_the_labels_by_the_sensors_request(
    review_env, llm_double, llm_double_resource, tmp_path
):
    from assets.recipes.iibench import assets as A

    data, ls, _srv, _configure = review_env
    store = TableStore(data)
    _frames(store, tmp_path)
    llm_double.responder = responder
    llm = llm_double_resource()
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    resources = {**_res(data), "llm": llm}
    run_config = {"ops": {"iibench_labels": {"config": {"min_explanation_chars": 20}}}}
    dg.materialize(
        [A.iibench_implication, A.iibench_labels],
        partition_key=BATCH,
        instance=instance,
        resources=resources,
        run_config=run_config,
    )
    assert sorted(store.read("iibench_labels")["frame_id"]) == ["img_a", "img_b", "img_c", "img_f"]

    first = _protocol_tick(data, instance, None)  # both steps pushed and read; no human result yet
    reqs = _run_all(data, instance, llm, first)
    assert reqs and all(r.tags["subtext/queue"] == "loop" for r in reqs)  # steps are loop work too
    cursor = first.cursor
    for _ in range(2):  # the push made the projects: read once more
        t = _protocol_tick(data, instance, cursor)
        assert all(r.partition_key is None for r in t.run_requests or [])
        _run_all(data, instance, llm, t)
        cursor = t.cursor

    inspector = sr.reviewer(ls, "inspector@flow.test")
    sr.submit(ls, h.tasks(ls, "inspection · iibench")["img_b"], inspector, [h.choice("inspection", "drop")])
    read = _protocol_tick(data, instance, cursor)  # the answer changed the project: read it
    assert [r.partition_key for r in read.run_requests] == [None]
    _run_all(data, instance, llm, read)
    assert h.results(data, "iibench__inspection")["img_b"]["decided_by"] == "human"

    flow = _protocol_tick(data, instance, read.cursor)  # the new human result flows on by itself
    (req,) = [r for r in flow.run_requests if r.partition_key is not None]
    assert req.partition_key == BATCH and req.tags["subtext/queue"] == "build"
    assert sorted(k.to_user_string() for k in req.asset_selection) == ["iibench_items", "iibench_labels"]
    _run_all(data, instance, llm, flow)
    labels = store.read("iibench_labels")
    assert sorted(labels["frame_id"]) == ["img_a", "img_c", "img_f"]
    by = {r["frame_id"]: json.loads(r["decided_by"]) for r in labels.to_dict("records")}
    assert by["img_a"] == {"inspection": "llm"}
    rej = store.read("rejects")
    (row,) = rej[(rej["stage"] == "iibench_labels") & (rej["item_id"] == "img_b")].to_dict("records")
    assert row["reason"] == "dropped_by_people" and "inspector@flow.test" in row["detail"]
    items = store.read("iibench_items")
    assert "img_b" not in set(items["unit_id"])
    assert all(json.loads(e)["decided_by"] == {"inspection": "llm", "labels": "llm"} for e in items["extra"])
    again = _protocol_tick(data, instance, flow.cursor)  # passed on once: no second run
    assert not [r for r in again.run_requests or [] if r.partition_key is not None]
