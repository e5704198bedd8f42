"""Human review end to end on a real Label Studio: tasks pushed by the assets, a scripted
reviewer answering through the real API (accept, reject, edit, a moved box, a box outside the
image, a disagreement and its adjudication), verdicts in DuckDB after a sensor tick, coverage,
agreement, the export gated by review, a deleted task queued again."""

from __future__ import annotations

import json

import dagster as dg
import krippendorff
import numpy as np
import pytest

import assets.evals.assets  # noqa: F401 - registers the leaderboard view (as the code location does)
from assets.people.factory import people_defs
from assets.splits.factory import benchmark_defs
from forge.benchmarks.registry import get
from forge.benchmarks.review_settings import review_spec
from forge.export.stages import run_export
from forge.splits.config import stage_settings
from forge.storage import TableStore, open_catalog
from resources.llm import LLMResource
from resources.review import ReviewResource
from resources.storage import StorageResource
from sensors.people import people_sensor
from tests.review import scripted as sr
from tests.review import world

pytestmark = pytest.mark.slow  # a real Label Studio server (shared by the module's tests)


def _resources(data) -> dict:
    # the stub backend: edited multiple-choice revisions re-enter the text-only probe
    llm = LLMResource(backend="stub", cache_path=str(data / "cache" / "llm_cache.sqlite"))
    return {"storage": StorageResource(data_dir=str(data)), "review": ReviewResource(), "llm": llm}


def _assets(*names: str) -> list:
    out = []
    for n in names:
        out += list(people_defs(n, "review").assets)
    return out


def materialize(data, keys: list[str], raise_on_error: bool = True) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        _assets("maia", "hummus"), selection=keys, resources=_resources(data), raise_on_error=raise_on_error
    )


def sensor_tick(data, instance, cursor=None) -> dg.SensorResult:
    ctx = dg.build_sensor_context(instance=instance, cursor=cursor, resources=_resources(data))
    return people_sensor(ctx)


def run_requests(data, result: dg.SensorResult) -> None:
    for req in result.run_requests or []:
        materialize(data, [k.to_user_string() for k in req.asset_selection])


def check(result: dg.ExecuteInProcessResult, name: str) -> dg.AssetCheckEvaluation:
    return next(e for e in result.get_asset_check_evaluations() if e.check_name == name)


def q(data, sql: str):
    with open_catalog(TableStore(data)) as con:
        return con.execute(sql).df()


def test_review_gates_the_export_end_to_end(review_env):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  maia: {reviewers: 2}\n  hummus: {reviewers: 1}\n")
    store = TableStore(data)
    world.maia(store)
    world.hummus(store)
    assert review_spec("maia", get("maia").review).reviewers == 2

    materialize(data, ["maia_review_tasks", "hummus_review_tasks"])
    maia_tasks = sr.tasks_by_item(ls, "review · maia")
    hum_tasks = sr.tasks_by_item(ls, "review · hummus")
    assert sorted(maia_tasks) == ["m1", "m2", "m3", "m4"] and sorted(hum_tasks) == ["h1", "h2"]
    project = next(p for p in ls.projects() if "review · maia" in p["title"])
    assert project["maximum_annotations"] == 2
    assert "✓ GOLD" in maia_tasks["m1"]["data"]["options_text"]
    assert hum_tasks["h1"]["predictions"], "Hummus boxes are pre-drawn on the image"
    media = ls.session.get(ls.url + hum_tasks["h1"]["data"]["image"])
    assert media.status_code == 200 and media.content[:4] == b"\x89PNG"  # served from the data dir

    r1, r2, r3 = (sr.reviewer(ls, f"{n}@review.test") for n in ("r1", "r2", "r3"))
    sr.submit(ls, maia_tasks["m1"], r1, sr.ACCEPT, 40)
    sr.submit(ls, maia_tasks["m1"], r2, sr.ACCEPT, 20)
    sr.submit(ls, maia_tasks["m2"], r1, sr.reject("wrong_gold"))
    sr.submit(ls, maia_tasks["m2"], r2, sr.reject("wrong_gold"))
    sr.submit(ls, maia_tasks["m3"], r1, sr.ACCEPT)
    sr.submit(ls, maia_tasks["m3"], r2, sr.reject("ambiguous"))  # a disagreement
    sr.submit(ls, maia_tasks["m4"], r1, sr.edit(question="Why does the person in m4 leave the room?"))
    sr.submit(ls, hum_tasks["h1"], r1, [sr.choice("verdict", "accept"), sr.box(0, 0.15, 0.25, 0.3, 0.4)])
    sr.submit(ls, hum_tasks["h2"], r1, [sr.choice("verdict", "edit"), sr.box(0, 0.5, 0.8, 0.2, 0.4)])  # off the image

    instance = dg.DagsterInstance.ephemeral()
    tick = sensor_tick(data, instance)
    assert {k.to_user_string() for r in tick.run_requests for k in r.asset_selection} == {
        "maia_review_results",
        "maia_review_tasks",
        "hummus_review_results",
        "hummus_review_tasks",
    }
    run_requests(data, tick)  # one run: read, then push

    v = q(data, "select * from verdicts")
    assert len(v) == 9 and v["verdict_id"].is_unique
    m4 = v[v.item_id == "m4"].iloc[0]
    assert m4.verdict == "edit" and m4.edit_status == "applied" and m4.reviewer == "r1@review.test"
    assert json.loads(m4.edit_blind)["revision"] == m4.new_revision  # the edited text went through the probe
    h1 = v[v.item_id == "h1"].iloc[0]
    assert h1.verdict == "edit" and h1.edit_status == "applied"  # moving the box is an edit
    h2 = v[v.item_id == "h2"].iloc[0]
    assert h2.edit_status == "refused" and "outside the image" in h2.edit_note
    assert v.loc[v.item_id == "m1", "seconds"].sum() == 60
    rej = q(data, "select * from rejects where stage = 'human_review'")
    assert list(rej.item_id) == ["m2"] and list(rej.reason) == ["reviewer_rejected"]
    assert rej.detail.iloc[0].startswith("wrong_gold")  # the reviewer's reason from the fixed list

    # re-reading the tool never duplicates rows; an unchanged tool launches no run
    again = sensor_tick(data, instance, tick.cursor)
    assert not again.run_requests
    res = materialize(data, ["maia_review_results"])
    assert len(q(data, "select * from verdicts")) == 9
    cov = check(res, "review_coverage")
    assert not cov.passed and cov.metadata["coverage"].value == "2/4"  # m1 accepted, m2 rejected
    md = res.asset_materializations_for_node("maia_review_results")[0].metadata
    # m4: only r1 judged its first revision, so it is not a unit; m1 m2 m3 are (r1, r2)
    expected = krippendorff.alpha(reliability_data=np.array([[1, 0, 1], [1, 0, 0]]), level_of_measurement="nominal")
    assert md["agreement"].value["alpha"] == pytest.approx(expected, abs=1e-4)
    assert md["agreement"].value["units"] == 3
    assert set(md["agreement_by_category"].value) == {"implicit_causal", "spatial"}

    # the sensor's run pushed after reading: m3 went to adjudication, m4's edited revision replaced its task
    assert sorted(q(data, "select event from review_task_ledger where item_id = 'm4'").event) == [
        "created",
        "created",
        "deleted",
    ]
    adj = sr.tasks_by_item(ls, "adjudication")
    assert list(adj) == ["m3"] and "r2@review.test: reject (ambiguous)" in adj["m3"]["data"]["prior_text"]
    new_m4 = sr.tasks_by_item(ls, "review · maia")["m4"]
    assert new_m4["data"]["question"] == "Why does the person in m4 leave the room?"
    sr.submit(ls, adj["m3"], r3, sr.ACCEPT)
    run_requests(data, sensor_tick(data, instance, tick.cursor))
    v = q(data, "select * from verdicts where item_id = 'm4'")
    assert v.edit_status.tolist() == ["applied"] and not v.stale.any()  # a task the push replaced is not "deleted"

    # the export holds back m4 (one accept of two), drops m2, keeps m1 and the adjudicated m3
    spec = get("maia")
    md_export = run_export(store, spec, stage_settings(spec), force_stub=False).metadata
    exported = {json.loads(line)["item_id"] for line in _export_lines(data, "maia")}
    assert exported == {"m1", "m3"}
    assert md_export["review_coverage"] == "3/4"
    card = (data / "exports" / "maia" / "v1" / "README.md").read_text()
    top = card.split("## Loading")[0]  # every exported item was accepted by people: the card says so, exactly
    assert "Not human-reviewed" not in top and "2 of 4 items human-accepted; 1 held back; 1 rejected" in top
    assert "## Human review" in card and "Krippendorff" in card and "reviewer minutes per accepted item" in card
    assert "LLM dollars per accepted item" in card
    spend = q(data, "select * from review_spend where benchmark = 'maia'").iloc[0]
    # 40 + 20 (m1) + 30 + 30 (m2) + 30 + 30 + 30 adjudication (m3) + 30 (m4's edit) seconds over the items
    # accepted now, m1 and m3 (m4's edited revision has one accept of two): the card's figure
    assert spend.reviewer_minutes == 4.0 and spend.items_accepted == 2 and spend.reviewers == 3
    assert (
        spend.minutes_per_accepted_item == 2.0
        and "| reviewer minutes per accepted item | 2.0 (4.0 min in all) |" in card
    )

    # Hummus: the moved box is the new gold (edited_by provenance); the refused edit left h2 as it was
    hspec = get("hummus")
    run_export(store, hspec, stage_settings(hspec), force_stub=False)
    rows = {json.loads(line)["item_id"]: json.loads(line) for line in _export_lines(data, "hummus")}
    assert set(rows) == {"h1"}  # h2 still pending
    assert rows["h1"]["answer"] == "chains: [0.150, 0.250, 0.300, 0.400]"
    extra = rows["h1"]["extra"]
    assert (json.loads(extra) if isinstance(extra, str) else extra)["edited_by"] == ["r1@review.test"]


def _export_lines(data, name: str) -> list[str]:
    out = []
    versions = sorted((data / "exports" / name).glob("v*"))
    for f in sorted((versions[-1] / "data").glob("*/metadata.jsonl")):
        out += [line for line in f.read_text().splitlines() if line.strip()]
    return out


def test_deleted_task_goes_back_into_the_queue_and_nothing_is_lost(review_env):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\n")
    store = TableStore(data)
    world.maia(store, n=2)
    materialize(data, ["maia_review_tasks"])
    tasks = sr.tasks_by_item(ls, "review · maia")
    r1 = sr.reviewer(ls, "r1@review.test")
    sr.submit(ls, tasks["m1"], r1, sr.ACCEPT)
    instance = dg.DagsterInstance.ephemeral()
    tick = sensor_tick(data, instance)
    run_requests(data, tick)
    ls.delete_task(int(tasks["m1"]["id"]))
    ls.delete_task(int(tasks["m2"]["id"]))
    run_requests(data, sensor_tick(data, instance, tick.cursor))  # one run: read (stale), then push (recreated)
    v = q(data, "select * from verdicts")
    assert len(v) == 1 and bool(v.stale.iloc[0]) and v.stale_reason.iloc[0] == "task_deleted"  # kept, not counted
    assert sorted(sr.tasks_by_item(ls, "review · maia")) == ["m1", "m2"]
    assert set(q(data, "select action from review_tasks").action) == {"recreated"}
    res = materialize(data, ["maia_review_tasks"])  # a re-push keeps them
    assert res.asset_materializations_for_node("maia_review_tasks")[0].metadata["pushed"].value["review"] == {
        "kept": 2,
        "created": 0,
        "recreated": 0,
        "moved": 0,
        "replaced": 0,
        "deleted": 0,
        "deferred": 0,
    }


def test_label_studio_down_fails_naming_make_review_and_writes_nothing(review_env, monkeypatch):
    data, _ls, _srv, configure = review_env
    configure("defaults: {policy: required}\n")
    store = TableStore(data)
    world.maia(store, n=1)
    monkeypatch.setenv("SUBTEXT_REVIEW_URL", "http://127.0.0.1:9")  # nothing listens there
    res = materialize(data, ["maia_review_tasks"], raise_on_error=False)
    assert not res.success
    failure = next(e for e in res.all_events if e.event_type_value == "STEP_FAILURE")
    assert "make review" in str(failure.event_specific_data.error.message)
    assert not store.exists("review_tasks")
    configure("defaults: {policy: advisory}\n")  # the demo's profile: a note, not a failure
    res = dg.materialize(
        _assets("maia") + list(people_defs("maia", "human").assets),
        selection=["maia_review_tasks", "maia_review_results", "maia_human_tasks", "maia_human_results"],
        resources=_resources(data),
    )
    assert res.success  # nothing pushed yet: the verdicts and the human baseline have nothing to read
    assert "make review" in res.asset_materializations_for_node("maia_review_tasks")[0].metadata["note"].value


def test_human_baseline_row_on_the_leaderboard(review_env, ls_blind):
    """People answer the exported test items blind (VAGUE §5.3 reports human accuracy) on the blind
    baseline's own instance; the benchmark's own scorers score them, and the leaderboard shows model
    `human` with n and a CI."""
    data, _ls, _srv, configure = review_env
    ls = ls_blind[0]
    configure("defaults: {policy: advisory}\n")
    store = TableStore(data)
    world.vague(store, n=3)
    spec = get("vague")
    run_export(store, spec, stage_settings(spec), force_stub=False)
    assets = list(people_defs("vague", "human").assets)
    dg.materialize(assets, selection=["vague_human_tasks"], resources=_resources(data))
    keyed = sr.tasks_by_item(ls, "blind baseline")  # blind tasks carry an opaque key; review_tasks maps it back
    item_of = dict(q(data, "select task_id, item_id from review_tasks where kind = 'human'").itertuples(index=False))
    tasks = {item_of[t["id"]]: t for t in keyed.values()}
    assert sorted(tasks) == ["v1", "v2", "v3"]
    assert "GOLD" not in tasks["v1"]["data"]["options_text"] and "answer_text" not in tasks["v1"]["data"]
    gold = {i: "ABCD"[json.loads(line)["options"].index(f"Mop the floor {i[1]}")] for i, line in _gold(data)}
    wrong = {"A": "B", "B": "A", "C": "A", "D": "A"}
    people = [sr.reviewer(ls, f"p{i}@review.test") for i in range(3)]  # each answers in their own session
    picks = {"v1": gold["v1"], "v2": gold["v2"], "v3": wrong[gold["v3"]]}
    for (item, letter), who in zip(picks.items(), people, strict=True):
        sr.submit(ls, tasks[item], who, [sr.choice("choice", letter)])
    tick = sensor_tick(data, dg.DagsterInstance.ephemeral())
    (req,) = tick.run_requests  # one run: the human scores (and vague's first review push)
    assert "vague_human_results" in {k.to_user_string() for k in req.asset_selection}
    dg.materialize(assets, selection=["vague_human_results"], resources=_resources(data))
    # each person answered one item (right, right, wrong): the average of 1, 1, 0 over the 3 items
    lb = q(data, "select * from leaderboard where model = 'human (avg)'")
    assert len(lb) == 1 and lb.benchmark.iloc[0] == "vague" and lb.backend.iloc[0] == "human"
    row = lb.iloc[0]
    assert row.setting == "VLM" and row.n == 3 and row.value == pytest.approx(2 / 3)
    assert row.ci_low <= row.value <= row.ci_high
    preds = q(data, "select item_id, raw_reply, correct from eval_predictions where model like 'human:%' order by 1")
    assert list(preds.raw_reply) == list(picks.values()) and list(preds.correct) == [True, True, False]


def _gold(data) -> list[tuple[str, str]]:
    return [(json.loads(line)["item_id"], line) for line in _export_lines(data, "vague")]


def test_export_reads_verdicts_and_the_sensor_run_re_exports(review_env):
    """<b>_export depends on <b>_review_results (a review marks it Unsynced); with export_after_review the
    sensor's run materializes both, so the export that follows a review already leaves the rejected item out."""
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  maia: {reviewers: 1, export_after_review: true}\n")
    export = next(a for a in benchmark_defs("maia").assets if a.key == dg.AssetKey("maia_export"))
    assert dg.AssetKey("maia_review_results") in export.dependency_keys
    store = TableStore(data)
    world.maia(store, n=2)
    materialize(data, ["maia_review_tasks"])
    tasks = sr.tasks_by_item(ls, "review · maia")
    r1 = sr.reviewer(ls, "r1@review.test")
    sr.submit(ls, tasks["m1"], r1, sr.ACCEPT)
    sr.submit(ls, tasks["m2"], r1, sr.reject("wrong_gold"))
    tick = sensor_tick(data, dg.DagsterInstance.ephemeral())
    (req,) = tick.run_requests
    assert [k.to_user_string() for k in req.asset_selection] == [
        "maia_review_results",
        "maia_review_tasks",
        "maia_export",
    ]
    assets = [a for a in people_defs("maia", "review").assets if a.key in req.asset_selection]
    dg.materialize([*assets, export], resources=_resources(data))  # the run: verdicts, then the export
    assert {json.loads(line)["item_id"] for line in _export_lines(data, "maia")} == {"m1"}
