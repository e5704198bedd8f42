"""Review units on a real Label Studio (issue #44): a MAIA pool is one task showing its question,
8 answers and 8 pairs with their flags; a reviewer edits one answer in place and only the item
built from it gets a new revision; one rejected pair holds the whole pool back; a half-done pool
stays held back; a contradicting pool goes to an adjudicator who did not review it; re-reading
never duplicates a row. Scripted reviewers answer through Label Studio's real API as the browser does."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from assets.people.factory import people_defs
from forge.benchmarks.registry import get
from forge.export.stages import run_export
from forge.review import loop
from forge.review.items import revision
from forge.splits.config import stage_settings
from forge.storage import TableStore, open_catalog
from resources.llm import LLMResource
from resources.review import ReviewResource
from resources.storage import StorageResource
from tests.recipes.maia.test_maia_assets import corpus  # noqa: F401 - fixture
from tests.review import scripted as sr
from tests.review import world
from tests.review.scripted import DOCS

pytestmark = pytest.mark.slow  # a real Label Studio server


def _materialize(data, keys: list[str]) -> None:
    llm = LLMResource(backend="stub", cache_path=str(data / "cache" / "llm_cache.sqlite"))
    res = {"storage": StorageResource(data_dir=str(data)), "review": ReviewResource(), "llm": llm}
    dg.materialize(list(people_defs("maia", "review").assets), selection=keys, resources=res)


def _q(data, sql: str):
    with open_catalog(TableStore(data)) as con:
        return con.execute(sql).df()


def _tasks(ls, kind: str) -> dict[str, dict]:
    p = ls.project_by_title(loop.title(get("maia"), kind))
    return {t["data"]["item_id"]: t for t in ls.tasks(p["id"])} if p else {}


def part(j: int, value: str) -> dict:
    return {"from_name": f"p_edit_{j}", "to_name": f"p_text_{j}", "type": "textarea", "value": {"text": [value]}}


def _exported_pools(data) -> dict[str, int]:
    """Statement pairs per exported MAIA pool, by the query docs/review.md gives (its ```sql block)."""
    import re

    import duckdb

    (sql,) = [b for b in re.findall(r"```sql\n(.*?)```", DOCS.read_text(), flags=re.S) if "as pairs" in b]
    versions = sorted((data / "exports" / "maia").glob("v*"))
    if not versions or not list((versions[-1] / "data").glob("*/metadata.jsonl")):
        return {}
    sql = sql.replace("<data dir>", str(data)).replace("<version>", versions[-1].name)
    return {str(p): int(n) for p, n in duckdb.sql(sql).fetchall()}


def test_a_maia_pool_is_one_task_and_one_edited_answer_changes_only_its_item(review_env):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  maia: {reviewers: 1}\n")
    store = TableStore(data)
    rows = world.maia_pool(store, "q1", flags={"answer 3": "inconsistent_answer: the answer is about another clip"})
    rows += world.maia_pool(store, "q2")
    items = world.write_gated(store, "maia", rows)
    before = {r["item_id"]: revision(r) for r in items.to_dict("records")}
    _materialize(data, ["maia_review_tasks"])

    tasks = _tasks(ls, "review")
    assert sorted(tasks) == ["unit:q1", "unit:q2"]  # one task per pool, not 18
    t = tasks["unit:q1"]["data"]
    assert len(t["members"]) == 9 and len(t["parts"]) == 8 and t["question"] == "Why does the cook in q1 leave?"
    assert t["members"][0]["item_id"] == "q1_oe" and t["members"][1]["title"].startswith("pair 1")
    assert "✓ GOLD" in t["members"][1]["text"]
    assert "⚑ answer 3: inconsistent_answer" in t["parts"][2]["text"]  # the flag on the member it concerns
    assert "inconsistent_answer" in t["context_text"]

    r1 = sr.reviewer(ls, "r1@units.test")
    fixed = "The cook leaves because the kitchen fills with smoke."
    sr.submit(ls, tasks["unit:q1"], r1, [sr.choice("verdict", "edit"), part(2, fixed)], 120)
    sr.submit(ls, tasks["unit:q2"], r1, sr.ACCEPT, 90)
    _materialize(data, ["maia_review_results", "maia_review_tasks"])

    v = _q(data, "select * from verdicts order by verdict_id")
    assert len(v) == 18 and v.verdict_id.is_unique
    oe = v[v.item_id == "q1_oe"].iloc[0]
    assert oe.member == "answer 3" and oe.verdict == "edit" and oe.edit_status == "applied"
    assert set(v[v.item_id.str.startswith("q1_sv")].member) == {"unit"}
    assert abs(v[v.task_id == oe.task_id].seconds.sum() - 120) < 1e-6  # the task's time counted once

    status = _q(data, "select * from review_status where current")
    now = dict(zip(status.item_id, status.revision, strict=True))
    changed = sorted(i for i in before if now[i] != before[i])
    assert changed == ["q1_oe"]  # only the item built from the edited answer has a new revision
    gated = TableStore(data).read("gated_items", parts=["maia"])
    spec = get("maia")
    run_export(store, spec, stage_settings(spec), force_stub=False)
    assert _exported_pools(data) == {"q1": 8, "q2": 8}
    versions = sorted((data / "exports" / "maia").glob("v*"))
    exported = [
        json.loads(x) for f in (versions[-1] / "data").glob("*/metadata.jsonl") for x in f.read_text().splitlines() if x
    ]
    q1_oe = next(r for r in exported if r["item_id"] == "q1_oe")
    assert q1_oe["references"][2] == fixed and q1_oe["references"][3] != fixed
    extra = q1_oe["extra"] if isinstance(q1_oe["extra"], dict) else json.loads(q1_oe["extra"])
    seen = extra["flags_reviewed"]
    seen = json.loads(seen) if isinstance(seen, str) else seen
    assert [(f["member"], f["outcome"]) for f in seen] == [("answer 3", "fixed")], extra
    assert len(gated) == 18

    _materialize(data, ["maia_review_results"])  # a re-read replaces rows, never adds one
    assert len(_q(data, "select * from verdicts")) == 18


def test_a_pool_with_one_rejected_pair_or_a_half_done_review_is_held_back_whole(review_env):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  maia: {reviewers: 1}\n")
    store = TableStore(data)
    world.write_gated(store, "maia", world.maia_pool(store, "q1") + world.maia_pool(store, "q2"))
    _materialize(data, ["maia_review_tasks"])
    tasks = _tasks(ls, "review")
    r1 = sr.reviewer(ls, "r1@units.test")
    # pool q1: the unit accepted, pair 4 rejected on its own block; pool q2 accepted whole
    reject_pair = [
        sr.choice("verdict", "accept"),
        sr.member(4, "verdict", "reject"),
        sr.member(4, "reason", "ambiguous"),
    ]
    sr.submit(ls, tasks["unit:q1"], r1, reject_pair)
    sr.submit(ls, tasks["unit:q2"], r1, sr.ACCEPT)
    _materialize(data, ["maia_review_results", "maia_review_tasks"])
    v = _q(data, "select item_id, member, verdict, reason from verdicts where item_id = 'q1_sv4'").iloc[0]
    assert (v.member, v.verdict, v.reason) == ("member 5", "reject", "ambiguous")
    status = _q(data, "select item_id, status, export from review_status where current")
    by = dict(zip(status.item_id, status.export, strict=True))
    assert by["q1_sv4"] == "dropped" and {by[f"q1_sv{i}"] for i in (1, 2, 3, 5, 6, 7, 8)} == {"held_back"}
    assert by["q1_oe"] == "held_back" and {by[i] for i in by if i.startswith("q2")} == {"kept"}

    # half done: pool q2's pair 1 comes back regenerated; its 8 other members stay accepted, the pool waits whole
    rows = world.maia_pool(store, "q1") + world.maia_pool(store, "q2")
    new = next(r for r in rows if r["item_id"] == "q2_sv1")
    new["options"] = ["The cook in q2 opens the oven door.", "The cook in q2 shuts the oven door."]
    world.write_gated(store, "maia", rows)
    _materialize(data, ["maia_review_results", "maia_review_tasks"])
    status = _q(data, "select item_id, status, export from review_status where current and item_id like 'q2%'")
    assert dict(zip(status.item_id, status.status, strict=True))["q2_sv1"] == "pending"
    assert set(status.export) == {"held_back"}  # 8 accepted members wait for the ninth
    again = _tasks(ls, "review")["unit:q2"]["data"]  # the pool comes back whole, each member's status shown
    titles = {m["item_id"]: m["title"] for m in again["members"]}
    assert titles["q2_sv1"].endswith("pending") and titles["q2_sv2"].endswith("accepted")
    spec = get("maia")
    run_export(store, spec, stage_settings(spec), force_stub=False)
    versions = sorted((data / "exports" / "maia").glob("v*"))
    assert not versions or _exported_pools(data) == {}  # neither pool goes out in part


def test_a_contradicting_pool_is_resolved_by_an_adjudicator(review_env):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  maia: {reviewers: 1}\n")
    store = TableStore(data)
    note = "pool_contradiction: answers [2, 5] contradict the others"
    world.write_gated(store, "maia", world.maia_pool(store, "q1", flags={"answer 2": note, "answer 5": note}))
    _materialize(data, ["maia_review_tasks"])
    assert _tasks(ls, "review") == {}  # the paper's extra annotator, not a regeneration and not the reviewers
    adj = _tasks(ls, "adjudication")
    assert list(adj) == ["unit:q1"] and "pool_contradiction" in adj["unit:q1"]["data"]["prior_text"]

    # the adjudicator keeps the answers that stand, replaces answer 2 and edits answer 5
    r2 = sr.reviewer(ls, "adjudicator@units.test")
    new2, new5 = "The cook leaves to answer the phone.", "The cook leaves because the phone rings in the hall."
    sr.submit(ls, adj["unit:q1"], r2, [sr.choice("verdict", "edit"), part(1, new2), part(4, new5)])
    _materialize(data, ["maia_review_results", "maia_review_tasks"])
    v = _q(data, "select * from verdicts")
    assert set(v.project_kind) == {"adjudication"} and len(v) == 9
    status = _q(data, "select item_id, status, export from review_status where current")
    assert set(status.status) == {"accepted"} and set(status.export) == {"kept"}
    spec = get("maia")
    run_export(store, spec, stage_settings(spec), force_stub=False)
    assert _exported_pools(data) == {"q1": 8}
    versions = sorted((data / "exports" / "maia").glob("v*"))
    exported = [
        json.loads(x) for f in (versions[-1] / "data").glob("*/metadata.jsonl") for x in f.read_text().splitlines() if x
    ]
    oe = next(r for r in exported if r["item_id"] == "q1_oe")
    assert oe["references"][1] == new2 and oe["references"][4] == new5  # the pool's answers are the adjudicated ones


def test_every_exported_maia_pool_built_by_the_recipe_has_8_pairs_after_a_scripted_review(review_env, request):
    """The recipe's own stages (offline stub) build the fixture clip's pools; a scripted reviewer
    reviews every pool task (one pair of one pool rejected); the docs' query finds 8 pairs in every
    exported pool and none of the pool with the rejected pair."""
    import shutil

    from resources.nli import NLIResource
    from tests.recipes.maia.test_maia_assets import ALL
    from tests.review.test_review_regenerate import _builder

    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  maia: {reviewers: 1}\n")
    built = request.getfixturevalue("corpus")  # the MAIA fixture clip (tests/recipes/maia)
    stub = LLMResource(backend="stub", cache_path=str(built.data_dir / "cache.sqlite"))
    res = {"storage": StorageResource(data_dir=str(built.data_dir)), "llm": stub, "nli": NLIResource(backend="llm")}
    _builder(list(ALL), "b1", res, "maia_answer_pools")()
    items = built.read("maia_items")
    shutil.copytree(built.data_dir / "media", data / "media", dirs_exist_ok=True)
    rows = items.assign(split="test", group_id=items["unit_id"], reshuffled=False, lineage=None)
    world.write_gated(TableStore(data), "maia", rows.to_dict("records"))
    pools = items["labels"].map(lambda x: json.loads(x)["question_id"])
    sizes = pools[items["task"] == "statement_verification"].value_counts()
    assert len(sizes) >= 2 and set(sizes) == {8}, sizes  # the recipe builds 8 pairs per pool

    _materialize(data, ["maia_review_tasks"])
    tasks = _tasks(ls, "review")
    assert sorted(tasks) == sorted(f"unit:{q}" for q in sizes.index)  # one task per pool
    r1 = sr.reviewer(ls, "r1@units.test")
    first, *rest = sorted(tasks)
    pair = next(m["item_id"] for m in tasks[first]["data"]["members"] if m["item_id"].startswith("maia_sv_"))
    sr.submit(ls, tasks[first], r1, sr.reject_member(tasks[first], pair, "ambiguous"))
    for key in rest:
        sr.submit(ls, tasks[key], r1, sr.ACCEPT)
    _materialize(data, ["maia_review_results"])
    spec = get("maia")
    run_export(TableStore(data), spec, stage_settings(spec), force_stub=True)  # the stub built them
    exported = _exported_pools(data)
    assert exported == {k.removeprefix("unit:"): 8 for k in rest}  # 8 pairs or none, every pool
