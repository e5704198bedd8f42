"""The review loop closes by itself on a real Label Studio (docs/review.md, "The loop"): the
sensor's ticks alone take a review from the first push to the export under `required` (a
dispute to adjudication, an edit to a new task, a refused edit back to its reviewer), one run per
tick; a task deleted in the tool comes back whichever order push and read run in; Label Studio
stopped mid-push gives the true count and the next push continues without duplicates."""

from __future__ import annotations

import json
import shutil
import socket

import dagster as dg
import pandas as pd
import pytest

from assets.people.factory import people_defs
from assets.splits.factory import benchmark_defs
from forge.benchmarks.registry import get
from forge.people import project, push
from forge.people import server as review_server
from forge.people.client import LabelStudio
from forge.review import loop
from forge.review.items import task_data
from forge.review.labelconfig import review_config
from forge.review.stages import gated_items
from forge.splits.config import stage_settings
from forge.storage import TableStore, open_catalog
from forge.storage.contracts import load_contract
from resources.llm import LLMResource
from resources.review import ReviewResource
from resources.storage import StorageResource
from sensors.people import people_sensor
from tests.review import scripted as sr
from tests.review import world

pytestmark = pytest.mark.slow  # a real Label Studio server


def _resources(data) -> dict:
    llm = LLMResource(backend="stub", cache_path=str(data / "cache" / "llm_cache.sqlite"))
    return {"storage": StorageResource(data_dir=str(data)), "review": ReviewResource(), "llm": llm}


def _assets() -> list:
    out = [a for n in ("maia", "hummus") for a in people_defs(n, "review").assets]
    out += list(people_defs("maia", "human").assets)  # an export's baseline is pushed by the loop too
    return out + [a for a in benchmark_defs("maia").assets if a.key == dg.AssetKey("maia_export")]


def materialize(data, keys, instance=None, raise_on_error: bool = True) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        _assets(), selection=keys, resources=_resources(data), instance=instance, raise_on_error=raise_on_error
    )


def tick(data, instance, cursor=None) -> dg.SensorResult:
    return people_sensor(dg.build_sensor_context(instance=instance, cursor=cursor, resources=_resources(data)))


def keys_of(result: dg.SensorResult) -> set[str]:
    return {k.to_user_string() for r in result.run_requests or [] for k in r.asset_selection}


def run(data, instance, result: dg.SensorResult) -> dg.ExecuteInProcessResult:
    """The run the tick asked for (exactly one), as the daemon would launch it."""
    (req,) = result.run_requests
    return materialize(data, list(req.asset_selection), instance)


def q(data, sql: str):
    with open_catalog(TableStore(data)) as con:
        return con.execute(sql).df()


def tasks_in(ls: LabelStudio, title: str) -> dict[str, dict]:
    p = ls.project_by_title(title)
    return {} if p is None else {t["data"].get("task_key") or t["data"]["item_id"]: t for t in ls.tasks(p["id"])}


def _exported(data, name: str) -> tuple[set[str], str]:
    latest = sorted((data / "exports" / name).glob("v*"))[-1]
    ids = {
        json.loads(line)["item_id"]
        for f in (latest / "data").glob("*/metadata.jsonl")
        for line in f.read_text().splitlines()
        if line.strip()
    }
    return ids, (latest / "README.md").read_text()


def test_the_sensor_takes_a_review_from_push_to_export_with_no_manual_step(review_env):
    data, ls, _srv, configure = review_env
    configure(
        "defaults: {policy: required}\n"
        "benchmarks:\n  maia: {reviewers: 2, export_after_review: true}\n  hummus: {reviewers: 1}\n"
    )
    store = TableStore(data)
    world.maia(store, n=3)
    world.hummus(store)
    maia, hummus = get("maia"), get("hummus")
    review_title = loop.title(maia, "review")
    instance = dg.DagsterInstance.ephemeral()

    # tick 1: the first push of both benchmarks, in one run
    t1 = tick(data, instance)
    assert len(t1.run_requests) == 1
    assert keys_of(t1) == {
        "maia_review_results",
        "maia_review_tasks",
        "maia_export",
        "hummus_review_results",
        "hummus_review_tasks",
    }
    run(data, instance, t1)
    assert sorted(tasks_in(ls, review_title)) == ["m1", "m2", "m3"]
    assert set(q(data, "select project_title from review_tasks where benchmark = 'maia'").project_title) == {
        "MAIA review · maia"
    }
    assert not tick(data, instance, t1.cursor).run_requests  # nothing changed: no run

    r1, r2, r3 = (sr.reviewer(ls, f"{n}@loop.test") for n in ("r1", "r2", "r3"))
    mt, ht = tasks_in(ls, review_title), tasks_in(ls, loop.title(hummus, "review"))
    sr.submit(ls, mt["m1"], r1, sr.ACCEPT)
    sr.submit(ls, mt["m1"], r2, sr.reject("ambiguous"))  # a dispute
    sr.submit(ls, mt["m2"], r1, sr.ACCEPT)
    sr.submit(ls, mt["m2"], r2, sr.ACCEPT)
    sr.submit(ls, mt["m3"], r1, sr.edit(question="Why does the person in m3 leave?"))
    sr.submit(ls, ht["h1"], r1, sr.ACCEPT)
    sr.submit(ls, ht["h2"], r1, [sr.choice("verdict", "edit"), sr.box(0, 0.5, 0.8, 0.2, 0.4)])  # off the image

    # tick 2: ONE run reads both benchmarks and pushes: dispute → adjudication, the edit → a new
    # task in the same project, the refused edit → back to its reviewer; the export holds back
    t2 = tick(data, instance, t1.cursor)
    assert len(t2.run_requests) == 1 and {"maia_review_tasks", "hummus_review_tasks"} <= keys_of(t2)
    res = run(data, instance, t2)
    assert res.success
    cov = next(
        e
        for e in res.get_asset_check_evaluations()
        if e.asset_key == dg.AssetKey("maia_review_results") and e.check_name == "review_coverage"
    )
    assert not cov.passed  # held back under `required`: a warning, the run is green
    assert cov.severity == dg.AssetCheckSeverity.WARN and cov.metadata["held_back"].value == 2
    adj = tasks_in(ls, loop.title(maia, "adjudication"))
    assert list(adj) == ["m1"] and "r2@loop.test: reject (ambiguous)" in adj["m1"]["data"]["prior_text"]
    mt = tasks_in(ls, review_title)
    assert mt["m3"]["data"]["question"] == "Why does the person in m3 leave?"
    assert [p["title"] for p in ls.projects() if "maia" in p["title"] and "review" in p["title"]] == [review_title]
    back = tasks_in(ls, loop.title(hummus, "returned"))
    (key,) = back
    assert back[key]["data"]["item_id"] == "h2" and back[key]["data"]["returned_to"] == "r1@loop.test"
    assert "outside the image" in back[key]["data"]["returned_reason"]
    assert "RETURNED to r1@loop.test" in back[key]["data"]["heading"]
    views = ls.request(
        "GET", "/api/dm/views", params={"project": ls.project_by_title(loop.title(hummus, "returned"))["id"]}
    )
    assert [v["data"]["title"] for v in views] == ["Returned to r1@loop.test"]
    ids, card = _exported(data, "maia")
    assert ids == {"m2"}  # m1 disputed, m3's new revision pending: held back
    said = res.asset_materializations_for_node("maia_export")[0].metadata["review"].value
    assert said == "1 of 3 items human-accepted; 2 held back"  # the run is green and says what it held back
    top = card.split("## Loading")[0]
    assert "Not human-reviewed" not in top and "1 of 3 items human-accepted; 2 held back" in top

    sr.submit(ls, adj["m1"], r3, sr.ACCEPT)
    sr.submit(ls, mt["m3"], r1, sr.ACCEPT)
    sr.submit(ls, mt["m3"], r2, sr.ACCEPT)
    sr.submit(ls, back[key], r1, sr.ACCEPT)  # the reviewer answers the returned task

    t3 = tick(data, instance, t2.cursor)
    assert len(t3.run_requests) == 1
    # the export v1 the last run made has no blind baseline yet: this run pushes it (issue #53)
    assert {"maia_human_tasks", "maia_human_results"} <= keys_of(t3)
    run(data, instance, t3)
    ids, card = _exported(data, "maia")
    assert ids == {"m1", "m2", "m3"}
    assert "3 of 3 items human-accepted" in card.split("## Loading")[0]
    v = q(data, "select item_id, verdict, stale from verdicts where benchmark = 'hummus' and item_id = 'h2'")
    assert sorted(v.verdict) == ["accept", "edit"]
    assert tasks_in(ls, loop.title(hummus, "returned")) == {}  # answered: the returned task is retired
    status = q(data, "select count(*) as n from verdicts where benchmark = 'hummus' and not stale").n.iloc[0]
    assert status == 3
    t3b = tick(data, instance, t3.cursor)  # the baseline's new projects are read once
    assert keys_of(t3b) == {"maia_human_results"}
    run(data, instance, t3b)
    t3 = t3b
    assert not tick(data, instance, t3.cursor).run_requests  # the loop is at rest

    # a regeneration: m2 is asked again upstream and the gates publish its new revision; the
    # sensor sees the gated items newer than the last push and sends the revision to review
    rows = gated_items(store, "maia").to_dict("records")
    for r in rows:
        r["question"] = "Which statement about clip m2 holds, asked again?" if r["item_id"] == "m2" else r["question"]
    world.write_gated(store, "maia", rows)
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key="maia_gated"))
    t4 = tick(data, instance, t3.cursor)
    assert keys_of(t4) == {"maia_review_results", "maia_review_tasks", "maia_export"}
    run(data, instance, t4)
    assert tasks_in(ls, review_title)["m2"]["data"]["question"] == "Which statement about clip m2 holds, asked again?"
    ids, card = _exported(data, "maia")
    assert ids == {"m1", "m3"} and "2 of 3 items human-accepted; 1 held back" in card.split("## Loading")[0]


@pytest.mark.parametrize("order", ["push then read", "read then push"])
def test_a_deleted_task_comes_back_and_its_verdict_goes_stale(review_env, order):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\n")
    store = TableStore(data)
    world.maia(store, n=2)
    title = loop.title(get("maia"), "review")
    materialize(data, ["maia_review_results", "maia_review_tasks"])
    first = tasks_in(ls, title)
    r1 = sr.reviewer(ls, "r1@loop.test")
    sr.submit(ls, first["m1"], r1, sr.ACCEPT)
    materialize(data, ["maia_review_results"])
    assert q(data, "select stale from verdicts").stale.tolist() == [False]  # m1 accepted
    ls.delete_task(int(first["m1"]["id"]))
    instance = dg.DagsterInstance.ephemeral()
    assert "maia_review_tasks" in keys_of(tick(data, instance))  # the sensor notices the deletion

    steps = (
        ["maia_review_tasks", "maia_review_results"]
        if order == "push then read"
        else ["maia_review_results", "maia_review_tasks"]
    )
    pushed = None
    for key in steps:
        res = materialize(data, [key])
        if key == "maia_review_tasks":
            pushed = res.asset_materializations_for_node(key)[0].metadata["pushed"].value["review"]
    assert pushed["recreated"] == 1 and pushed["kept"] == 1 and pushed["created"] == 0
    now = tasks_in(ls, title)
    assert sorted(now) == ["m1", "m2"] and now["m1"]["id"] != first["m1"]["id"]
    v = q(data, "select * from verdicts")
    assert len(v) == 1 and bool(v.stale.iloc[0]) and v.stale_reason.iloc[0] == "task_deleted"
    ledger = q(data, "select task_id, item_id, event from review_task_ledger order by recorded_at, task_id")
    assert sorted(ledger.loc[ledger.item_id == "m1", "event"]) == ["created", "missing", "recreated"]
    assert len(q(data, "select * from review_tasks where item_id = 'm1'")) == 1
    again = materialize(data, ["maia_review_results", "maia_review_tasks"])  # a re-run changes nothing
    counts = again.asset_materializations_for_node("maia_review_tasks")[0].metadata["pushed"].value["review"]
    assert counts["kept"] == 2 and counts["recreated"] == counts["created"] == 0
    assert len(q(data, "select * from review_task_ledger")) == len(ledger)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def own_server(ls_server, tmp_path, monkeypatch):
    """A Label Studio of this test's own, which it may stop and start again (a copy of the
    session server's migrated database, so it starts in seconds)."""
    shared, ls, _srv = ls_server
    data = tmp_path / "data"
    (data / "review").mkdir(parents=True)
    for p in ls.projects():
        ls.request("DELETE", f"/api/projects/{p['id']}")
    shutil.copytree(shared / "review" / "label-studio", data / "review" / "label-studio")
    shutil.copy(shared / "review" / "admin.json", data / "review" / "admin.json")
    monkeypatch.setenv("SUBTEXT_REVIEW_PORT", str(_free_port()))
    monkeypatch.setenv("SUBTEXT_DATA_DIR", str(data))
    cfg = tmp_path / "review.yaml"
    cfg.write_text("defaults: {policy: required}\n")
    monkeypatch.setenv("SUBTEXT_REVIEW_CONFIG", str(cfg))
    monkeypatch.delenv("SUBTEXT_REVIEW_POLICY", raising=False)
    procs = [review_server.start(data, timeout=300)[0]]
    try:
        yield data, procs
    finally:
        for proc in procs:  # only the processes this fixture started
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=120)  # a loaded 2-core machine (two test workers) needs more than 30 s


def test_label_studio_stopped_mid_push_says_how_many_and_the_next_push_continues(own_server, monkeypatch):
    data, procs = own_server
    store = TableStore(data)
    world.maia(store, n=8)
    real_create = LabelStudio.create_tasks
    made = []

    def create_then_stop(self, *args, **kwargs):
        tids = real_create(self, *args, **kwargs)
        made.extend(tids)
        if len(made) == 3:  # the server really stops after the first import (three tasks)
            procs[0].terminate()
            procs[0].wait(timeout=120)  # under load Label Studio takes over 30 s to stop
        return tids

    monkeypatch.setattr(push, "IMPORT_BATCH", 3)  # three tasks per import request
    monkeypatch.setattr(LabelStudio, "create_tasks", create_then_stop)
    res = materialize(data, ["maia_review_tasks"], raise_on_error=False)
    assert not res.success
    failure = next(e for e in res.all_events if e.event_type_value == "STEP_FAILURE")
    message = str(failure.event_specific_data.error.message)
    assert "3 of 8 tasks pushed before Label Studio stopped; the next push continues" in message
    assert "make review" in message
    ledger = TableStore(data).read("review_task_ledger", parts=["maia"])
    assert sorted(ledger.task_id) == sorted(made) and set(ledger.event) == {"created"}

    monkeypatch.setattr(LabelStudio, "create_tasks", real_create)
    procs.append(review_server.start(data, timeout=300)[0])
    res = materialize(data, ["maia_review_tasks"])
    assert res.asset_materializations_for_node("maia_review_tasks")[0].metadata["pushed"].value["review"] == {
        "kept": 3,
        "created": 5,
        "recreated": 0,
        "moved": 0,
        "replaced": 0,
        "deleted": 0,
        "deferred": 0,
    }
    srv = review_server.server(data)
    tasks = LabelStudio(srv.url, srv.token).tasks(
        LabelStudio(srv.url, srv.token).project_by_title(loop.title(get("maia"), "review"))["id"]
    )
    assert sorted(t["data"]["item_id"] for t in tasks) == [f"m{i}" for i in range(1, 9)]  # no duplicate
    ledger = TableStore(data).read("review_task_ledger", parts=["maia"])
    assert len(ledger) == 8 and ledger.task_id.is_unique


def test_projects_of_earlier_export_rounds_are_adopted_and_no_task_is_stranded(review_env):
    """Data from before one project per benchmark: `MAIA review · maia v1` and `v2`, and a
    review_tasks table whose titles read "1". The newest becomes the project, the older one's
    pending task moves into it, a decided item's task stays with its verdict."""
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\n")
    store = TableStore(data)
    world.maia(store, n=3)
    spec = get("maia")
    rs = stage_settings(spec).review_settings()
    items = {r["item_id"]: r for r in gated_items(store, "maia").to_dict("records")}
    title = loop.title(spec, "review")
    old = {}
    for n, ids in ((1, ["m1", "m2"]), (2, ["m3"])):
        p = ls.ensure_project(f"{title} v{n}", review_config(rs), **project.settings(1, "older round"))
        for i in ids:
            old[i] = (int(p["id"]), ls.create_task(int(p["id"]), task_data(items[i], rs, None, "review")))
    now = pd.Timestamp.now(tz="UTC")
    rows = [
        {"benchmark": "maia", "kind": "review", "item_id": i, "revision": task_data(items[i], rs, None)["revision"]}
        | {"project_id": pid, "project_title": "1", "task_id": tid, "action": "created", "pushed_at": now}
        for i, (pid, tid) in old.items()
    ]
    c = load_contract("review_tasks")
    store.write("review_tasks", c.conform(pd.DataFrame(rows)), "maia", schema=c.arrow_schema())
    r1 = sr.reviewer(ls, "r1@loop.test")
    sr.submit(ls, {"id": old["m1"][1]}, r1, sr.ACCEPT)  # m1 decided in the v1 project

    res = materialize(data, ["maia_review_results", "maia_review_tasks"])
    counts = res.asset_materializations_for_node("maia_review_tasks")[0].metadata["pushed"].value["review"]
    assert counts["moved"] == 1 and counts["kept"] == 2 and counts["created"] == 0
    titles = {p["title"]: p["id"] for p in ls.projects()}
    assert titles[title] == old["m3"][0] and f"{title} v2" not in titles  # v2 renamed: its tasks stay put
    assert sorted(tasks_in(ls, title)) == ["m2", "m3"]  # m2 moved in, no pending task left behind
    assert list(tasks_in(ls, f"{title} v1")) == ["m1"]  # the decided item keeps its task and verdict
    rt = q(data, "select item_id, project_title, action from review_tasks order by item_id")
    assert rt.project_title.tolist() == [f"{title} v1", title, title]  # titles as the tool has them
    assert rt.action.tolist() == ["kept", "moved", "kept"]
    v = q(data, "select item_id, stale from verdicts")
    assert v.item_id.tolist() == ["m1"] and not v.stale.any()
    ledger = q(data, "select item_id, event from review_task_ledger order by item_id, event")
    assert ledger.values.tolist() == [["m1", "adopted"], ["m2", "adopted"], ["m2", "deleted"], ["m2", "moved"]] + [
        ["m3", "adopted"]
    ]
