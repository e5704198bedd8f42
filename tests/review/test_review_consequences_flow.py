"""A reject reason's consequence end to end, on the shared real Label Studio server with scripted
reviewers (its real API, each in their own session): a ``bad_media`` reject removes its clip; a
ViMU ``wrong_gold`` asks ``vimu_annotations`` again (through the LLM double on 127.0.0.1) and only
the rejected task's item changes; VAGUE's ``wrong_gold`` asks the stage that wrote the intention;
Hummus' edited verdict propagates and a reviewed verdict survives a flipped regeneration."""

from __future__ import annotations

import json
import re
import shutil

import dagster as dg
import pandas as pd
import pytest

from assets.people.factory import people_defs
from assets.recipes.vimu.assets import vimu_annotations, vimu_items, vimu_questions
from assets.recipes.vimu.checks import CHECKS
from assets.recipes.vimu.logic.items import item_id as vimu_item
from forge.benchmarks.registry import get
from forge.benchmarks.review_spec import MemberAnswers
from forge.review.items import revision
from forge.storage import TableStore, open_catalog
from resources.llm import LLMResource
from resources.review import ReviewResource
from resources.storage import StorageResource
from tests.llm_double import Reply, double_resource
from tests.recipes.vague.test_vague_assets import data  # noqa: F401 - fixture (the VAGUE frames)
from tests.recipes.vimu.test_assets import BATCH, Script, annotation_reply, seed_upstream
from tests.review import scripted as sr
from tests.review import world

pytestmark = pytest.mark.slow  # the shared real Label Studio server


def _review(data, bench: str, *keys: str) -> None:
    """The benchmark's review assets, as the sensor or `make review` runs them."""
    llm = LLMResource(backend="stub", cache_path=str(data / "cache" / "llm_cache.sqlite"))
    res = {"storage": StorageResource(data_dir=str(data)), "review": ReviewResource(), "llm": llm}
    for key in keys:
        dg.materialize(list(people_defs(bench, "review").assets), selection=[f"{bench}_{key}"], resources=res)


def _gate(store: TableStore, bench: str, items: pd.DataFrame) -> None:
    """The built items as the gates pass them (split test, one group per unit)."""
    rows = items.assign(split="test", group_id=items["unit_id"], reshuffled=False, lineage=None)
    world.write_gated(store, bench, rows.to_dict("records"))


def _verdicts(ls, rv, bench: str, verdicts: dict[str, list[dict]]) -> None:
    """``rv`` gives each item its verdict (accept / reject / edit, as the form sends them): on the
    item's own task, or, where the paper's unit is one task, in one annotation of that unit: each
    named member's own block (reject with its reason, corrections), the unit accepted (``edit``
    when a member is corrected), which the members left unmarked take; where the paper asks each
    member for its answer (``member_answers = required``), each member left unmarked is accepted in
    its own block."""
    required = get(bench).review.member_answers == MemberAnswers.REQUIRED
    tasks = sr.tasks_by_item(ls, f"review · {bench}")
    units: dict[int, tuple[dict, list[dict]]] = {}
    for item, result in verdicts.items():
        if item in tasks and not tasks[item]["data"].get("members"):
            sr.submit(ls, tasks[item], rv, result)
            continue
        task = next(t for t in tasks.values() if item in [m["item_id"] for m in t["data"].get("members") or []])
        i = [m["item_id"] for m in task["data"]["members"]].index(item)
        entries = units.setdefault(int(task["id"]), (task, []))[1]
        for r in result:
            name = r["from_name"].removeprefix("corrected_")
            if name == "verdict" and r["value"]["choices"] == ["reject"]:
                entries.append({**r, "from_name": f"m_verdict_{i}", "to_name": f"m_text_{i}"})
            elif name != "verdict":
                entries.append({**r, "from_name": f"m_{name}_{i}", "to_name": f"m_text_{i}"})
    for task, entries in units.values():
        corrected = any(not e["from_name"].startswith(("m_verdict_", "m_reason_")) for e in entries)
        named = {e["from_name"].rsplit("_", 1)[1] for e in entries}
        n = len(task["data"]["members"])
        entries += [sr.member(i, "verdict", "accept") for i in range(n) if required and str(i) not in named]
        sr.submit(ls, task, rv, [sr.choice("verdict", "edit" if corrected else "accept"), *entries])


def _status(store: TableStore, bench: str) -> pd.Series:
    """item -> the status of its current revision (review_status)."""
    df = store.read("review_status", parts=[bench])
    return df[df["current"].astype(bool)].set_index("item_id")["status"]


def _rejects(data, bench: str) -> dict[str, str]:
    with open_catalog(TableStore(data)) as con:
        df = con.execute(
            f"select item_id, detail from rejects where stage = 'human_review' and partition = '{bench}'"
        ).df()
    return dict(zip(df["item_id"], df["detail"], strict=True))


# -- ViMU through the LLM double: the annotation's labels differ when asked again (a new seed) ------


class VimuScript(Script):
    """tests/recipes/vimu's scripted replies; Stage 2 asked again (a seed in the body) labels the
    clip's rhetoric Mockery instead of Sarcasm + Exaggeration, and says so in the intended meaning."""

    def __call__(self, body):
        name = body["response_format"]["json_schema"]["name"]
        if name == "vimu_annotate" and body.get("seed"):
            s = re.search(r"SCENARIO:(\w+)", json.dumps(body)).group(1)
            return Reply.json(
                {**annotation_reply(s), "rhetoric_mechanisms": ["Mockery"], "intended_meaning": "asked again"}
            )
        return super().__call__(body)


def _vimu(data, tmp_path, double):
    store = TableStore(data)
    seed_upstream(store)
    clips = store.read("clips")  # the clip files the review form plays
    clips["path"] = "media/clips/" + clips["clip_id"] + ".mp4"
    for rel in clips["path"]:
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).write_bytes(b"\x00\x00\x00\x18ftypmp42")
    store.write("clips", clips, BATCH)
    double.responder = VimuScript()
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    llm = double_resource(double, cache_path=str(tmp_path / "cache.sqlite"))
    resources = {"storage": StorageResource(data_dir=str(data)), "llm": llm}

    def build(*assets) -> None:
        for a in assets:
            res = dg.materialize(
                [a, *CHECKS], partition_key=BATCH, instance=instance, resources=resources, selection=[a.key]
            )
            assert res.success

    build(vimu_annotations, vimu_questions, vimu_items)
    return store, build


def test_a_bad_media_reject_removes_the_clip_with_its_reason(review_env, tmp_path, llm_double):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  vimu: {reviewers: 1}\n")
    store, _ = _vimu(data, tmp_path, llm_double)
    items = store.read("vimu_items")
    _gate(store, "vimu", items)
    _review(data, "vimu", "review_tasks")
    r1 = sr.reviewer(ls, "r1@review.test")
    eg, minor = vimu_item("clip_pass", "EG"), vimu_item("clip_minor", "OE")
    _verdicts(ls, r1, "vimu", {eg: sr.reject("bad_media"), minor: sr.ACCEPT})  # one item of the clip
    _review(data, "vimu", "review_results")

    clip = set(items.loc[items["unit_id"] == "clip_pass", "item_id"])
    assert len(clip) == 4
    rejected = _rejects(data, "vimu")
    assert set(rejected) == clip  # every item of the clip, each with the reviewer's reason
    assert rejected[vimu_item("clip_pass", "EG")] == "bad_media: rejected by r1@review.test"
    assert rejected[vimu_item("clip_pass", "OE")] == (
        f"bad_media: clip_pass dropped with {vimu_item('clip_pass', 'EG')}, rejected by r1@review.test"
    )
    status = _status(store, "vimu")
    assert (status[sorted(clip)] == "rejected").all() and status[vimu_item("clip_minor", "OE")] == "accepted"
    _review(data, "vimu", "review_tasks")  # nothing of the clip is left to review
    open_ = [t for t in sr.tasks_by_item(ls, "review · vimu").values() if not t.get("total_annotations")]
    shown = {t["data"]["item_id"] for t in open_} | {
        m["item_id"] for t in open_ for m in t["data"].get("members") or []
    }
    assert shown and not clip & shown


def test_a_vimu_wrong_gold_asks_vimu_annotations_again_for_that_task_only(review_env, tmp_path, llm_double):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  vimu: {reviewers: 1}\n")
    store, build = _vimu(data, tmp_path, llm_double)
    items = store.read("vimu_items")
    _gate(store, "vimu", items)
    _review(data, "vimu", "review_tasks")
    r1 = sr.reviewer(ls, "r1@review.test")
    rm, oe, sv = (vimu_item("clip_pass", t) for t in ("RM", "OE", "SV"))
    _verdicts(ls, r1, "vimu", {rm: sr.reject("wrong_gold"), oe: sr.ACCEPT, sv: sr.ACCEPT})
    _review(data, "vimu", "review_results")

    build(vimu_annotations, vimu_questions, vimu_items)  # what `cli.build --select vimu_annotations+` runs
    calls = store.read("llm_calls")  # each stage's latest run
    paid = calls[~calls["cache_hit"].astype(bool)]
    assert set(zip(paid["stage"], paid["item_id"])) == {("vimu_annotations", "clip_pass")}  # one new request
    ann = store.read("vimu_annotations").set_index("clip_id")
    assert list(ann.loc["clip_pass", "rhetoric_mechanisms"]) == ["Mockery"]
    assert json.loads(ann.loc["clip_pass", "gold_attempts"]) == {"RM": 1}
    assert ann.loc["clip_pass", "intended_meaning"] != "asked again"  # only the faulted task's labels changed
    after = store.read("vimu_items").set_index("item_id")
    before = items.set_index("item_id")
    assert after.loc[rm, "answer"] != before.loc[rm, "answer"]  # the RM gold was written again
    for same in (oe, sv, vimu_item("clip_pass", "EG")):  # the clip's other items keep their revision
        assert revision(after.loc[same].to_dict() | {"item_id": same}) == revision(
            before.loc[same].to_dict() | {"item_id": same}
        ), same

    _gate(store, "vimu", after.reset_index())
    _review(data, "vimu", "review_tasks", "review_results")
    v = store.read("verdicts", parts=["vimu"]).set_index("item_id")
    assert bool(v.loc[rm, "stale"]) and v.loc[rm, "stale_reason"] == "item_changed"  # the old reject stays
    assert not bool(v.loc[oe, "stale"])  # the accepted OE item needs no new review
    status = _status(store, "vimu")
    assert status[oe] == "accepted" and status[rm] == "pending"

    build(vimu_annotations)  # a plain re-run replays the regenerated reply: nothing is paid twice
    calls = store.read("llm_calls")
    assert calls[calls["stage"] == "vimu_annotations"]["cache_hit"].astype(bool).all()


# -- VAGUE: the correct option is the intention, written by vague_direct --------------------------


def test_a_vague_wrong_option_asks_the_intention_stage_again(review_env, request, tmp_path):
    from assets.recipes.vague import assets as va
    from assets.recipes.vague import checks as pkg
    from resources.embedder import EmbedderResource
    from tests.recipes.vague.test_vague_assets import BATCH as VB

    data_dir, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  vague: {reviewers: 1}\n")
    request.getfixturevalue("recipe_overrides")("vague", {"candidates": {"min_persons": 0, "max_per_batch": 10}})
    store = _into(data_dir, request.getfixturevalue("data"))  # the VAGUE fixture frames (tests/recipes/vague)
    stub = LLMResource(backend="stub", cache_path=str(tmp_path / "vague-cache.sqlite"))
    res = {"storage": StorageResource(data_dir=str(store.data_dir)), "embedder": EmbedderResource(), "llm": stub}
    chain = [va.vague_candidates, va.vague_direct, va.vague_indirect, va.vague_options, va.vague_items]
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [VB])

    def build() -> None:
        out = dg.materialize(chain + list(pkg.CHECKS), partition_key=VB, instance=instance, resources=res)
        assert out.success

    build()
    items = store.read("vague_items")
    assert len(items) >= 2
    # the review reads the same store as the recipe: point the review assets at it
    _gate(store, "vague", items)
    llm = LLMResource(backend="stub", cache_path=str(tmp_path / "review-cache.sqlite"))
    rres = {"storage": StorageResource(data_dir=str(store.data_dir)), "review": ReviewResource(), "llm": llm}

    def review(key: str) -> None:
        dg.materialize(list(people_defs("vague", "review").assets), selection=[f"vague_{key}"], resources=rres)

    review("review_tasks")
    bad = items.iloc[0]
    _verdicts(ls, sr.reviewer(ls, "r1@review.test"), "vague", {str(bad["item_id"]): sr.reject("wrong_gold")})
    review("review_results")
    before = store.read("vague_direct").set_index("frame_id")["intention"]

    build()
    calls = store.read("llm_calls")  # each stage's latest run
    paid = calls[~calls["cache_hit"].astype(bool)]
    assert set(paid.loc[paid["stage"] == "vague_direct", "item_id"]) == {bad["unit_id"]}  # that image only
    after = store.read("vague_direct").set_index("frame_id")["intention"]
    assert after[bad["unit_id"]] != before[bad["unit_id"]]  # the intention was written again
    assert (after.drop(bad["unit_id"]) == before.drop(bad["unit_id"])).all()
    new = store.read("vague_items").set_index("unit_id")
    assert after[bad["unit_id"]] in list(new.loc[bad["unit_id"], "options"])  # the correct option follows


# -- Hummus: the verdict a person gave is the pair's -----------------------------------------------


def _into(data, fixture_store: TableStore) -> TableStore:
    """A recipe fixture's tables and media, copied into the review server's data dir (the only
    folder its local-files storage serves)."""
    shutil.copytree(fixture_store.data_dir, data, dirs_exist_ok=True)
    return TableStore(data)


def _hummus(data, tmp_path, double, flip: bool = False):
    from assets.recipes.hummus import assets as ha
    from tests.llm_double.server import message_text
    from tests.recipes.hummus.test_hummus_assets import BATCH as HB
    from tests.recipes.hummus.test_hummus_assets import CAPTIONS, image_store, responder

    def replies(body):
        name = (body.get("response_format") or {}).get("json_schema", {}).get("name")
        if flip and name == "hummus_annotate" and body.get("seed") and "train wreck" in message_text(body):
            return {  # asked again, the model now says No (the reviewed verdict is Yes)
                "incongruities": ["odd"],
                "resolution": "none",
                "verdict": "No",
                "metaphors": [],
                "regions": [],
                "caption_highlighted": "",
                "explanation": "",
                "devices": [],
                "discard_reason": "",
            }
        return responder(body)

    double.responder = replies
    store = _into(data, image_store(tmp_path, CAPTIONS, HB))
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [HB])
    llm = double_resource(double, cache_path=str(tmp_path / "hummus-cache.sqlite"))
    resources = {"storage": StorageResource(data_dir=str(store.data_dir)), "llm": llm}

    def build(*assets) -> None:
        out = dg.materialize(
            list(assets),
            partition_key=HB,
            instance=instance,
            resources=resources,
            run_config={"ops": {"hummus_annotations": {"config": {"max_rounds": 1}}}},
        )
        assert out.success

    build(ha.hummus_pairs, ha.hummus_annotations, ha.hummus_items)
    return store, build, ha


def _hummus_review(store, key: str, tmp_path) -> None:
    llm = LLMResource(backend="stub", cache_path=str(tmp_path / "review-cache.sqlite"))
    res = {"storage": StorageResource(data_dir=str(store.data_dir)), "review": ReviewResource(), "llm": llm}
    dg.materialize(list(people_defs("hummus", "review").assets), selection=[f"hummus_{key}"], resources=res)


def _pair(items: pd.DataFrame, frame: str) -> pd.DataFrame:
    return items[items["unit_id"] == frame]


def test_a_hummus_verdict_edit_updates_the_labels_and_the_detail_items(review_env, tmp_path, llm_double):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  hummus: {reviewers: 1}\n")
    store, build, ha = _hummus(data, tmp_path, llm_double)
    items = store.read("hummus_items")
    pair = _pair(items, "img_p1")
    cls = pair.loc[pair["task"] == "classification", "item_id"].iloc[0]
    assert len(pair) == 6 and json.loads(pair["labels"].iloc[0])["verdict"] == "Yes"
    _gate(store, "hummus", items)
    _hummus_review(store, "review_tasks", tmp_path)
    _verdicts(ls, sr.reviewer(ls, "r1@review.test"), "hummus", {cls: sr.edit(answer="B")})  # Yes -> No
    _hummus_review(store, "review_results", tmp_path)

    status = _status(store, "hummus")
    assert status[cls] == "accepted"
    details = set(pair["item_id"]) - {cls}
    assert (status[sorted(details)] == "rejected").all()
    rej = _rejects(store.data_dir, "hummus")
    assert all(rej[i].startswith("verdict_edited: the pair's verdict is No") for i in details)
    v = store.read("verdicts", parts=["hummus"]).set_index("item_id")
    assert v.loc[cls, "edit_status"] == "applied"

    build(ha.hummus_annotations, ha.hummus_items)  # the recipe keeps the person's verdict
    ann = store.read("hummus_annotations").set_index("frame_id")
    assert ann.loc["img_p1", "verdict"] == "No" and list(ann.loc["img_p1", "metaphors"]) == []
    rebuilt = _pair(store.read("hummus_items"), "img_p1")
    assert rebuilt["task"].tolist() == ["classification"]  # a No pair has no detail items, as the recipe builds it
    _gate(store, "hummus", store.read("hummus_items"))
    _hummus_review(store, "review_tasks", tmp_path)
    _hummus_review(store, "review_results", tmp_path)
    v = store.read("verdicts", parts=["hummus"]).set_index("item_id")
    assert v.loc[cls, "edit_status"] == "applied" and not bool(v.loc[cls, "stale"])  # the edit still counts
    status = _status(store, "hummus")
    assert status[cls] == "accepted"


def test_a_reviewed_hummus_verdict_survives_a_flipped_regeneration(review_env, tmp_path, llm_double):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  hummus: {reviewers: 1}\n")
    store, build, ha = _hummus(data, tmp_path, llm_double, flip=True)
    items = store.read("hummus_items")
    pair = _pair(items, "img_p1").set_index("task")["item_id"]
    _gate(store, "hummus", items)
    _hummus_review(store, "review_tasks", tmp_path)
    r1 = sr.reviewer(ls, "r1@review.test")
    # the person says Yes; the box is wrong: asked again
    _verdicts(ls, r1, "hummus", {pair["classification"]: sr.ACCEPT, pair["image_box"]: sr.reject("wrong_gold")})
    _hummus_review(store, "review_results", tmp_path)

    build(ha.hummus_annotations, ha.hummus_items)  # asked again, the model says No
    rej = store.read("rejects")
    assert not ((rej["reason"] == "verdict_changed") & (rej["item_id"] == "img_p1")).any()  # the pair is not dropped
    ann = store.read("hummus_annotations").set_index("frame_id")
    assert ann.loc["img_p1", "verdict"] == "Yes"  # the first (human) verdict is kept
    assert ann.loc["img_p1", "detail_reject"] == "verdict_kept"
    rebuilt = _pair(store.read("hummus_items"), "img_p1")
    assert rebuilt["task"].tolist() == ["classification"] and rebuilt["answer"].tolist() == ["A"]
