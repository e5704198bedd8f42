"""VAGUE's human steps on a real Label Studio with scripted raters, through the real stages (LLM
test double): people's direct ratings replace the judge's (one rated 2 is dropped before the
indirect stage; a rating of 7 is refused and the judge's stands); people's indirect selection
replaces the judge's, and a candidate its raters rated 2 is not used: no options, no item."""

from __future__ import annotations

import shutil

import dagster as dg
import pytest

from forge.storage import TableStore
from tests.protocol import helpers as h
from tests.recipes.vague.test_vague_assets import BATCH, data, responder  # noqa: F401 - the recipe's fixture
from tests.review import scripted as sr

pytestmark = pytest.mark.slow  # a real Label Studio server


def _stages(store: TableStore, llm, names: list[str]) -> None:
    from assets.recipes.vague import assets as va
    from resources.embedder import EmbedderResource
    from resources.storage import StorageResource

    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    resources = {"storage": StorageResource(data_dir=str(store.data_dir)), "llm": llm, "embedder": EmbedderResource()}
    every = [va.vague_candidates, va.vague_direct, va.vague_indirect, va.vague_options, va.vague_items]
    res = dg.materialize(every, selection=names, partition_key=BATCH, resources=resources, instance=instance)
    assert res.success


def rate(person, task, to: str, **ratings: int) -> None:
    sr.submit(None, task, person, [h.rating(k, v, to) for k, v in ratings.items()])


def test_a_candidate_rated_2_by_its_raters_is_not_used(
    review_env,
    data,
    llm_double,
    llm_double_resource,
    recipe_overrides,
    monkeypatch,
):
    ddir, ls, _srv, _configure = review_env
    for sub in ("tables", "media"):  # the recipe's fixture, in the data dir Label Studio serves
        shutil.copytree(data.data_dir / sub, ddir / sub, dirs_exist_ok=True)
    store = TableStore(ddir)
    recipe_overrides("vague", {"candidates": {"min_persons": 0, "max_per_batch": 10}})
    llm_double.responder = responder
    llm = llm_double_resource()
    _stages(store, llm, ["vague_candidates", "vague_direct", "vague_indirect", "vague_options", "vague_items"])
    assert sorted(store.read("vague_items")["unit_id"]) == ["fr_bicycle", "fr_kettle"]  # the LLM alone

    # 1. direct ratings (§4.2.1): the judge's 5 / 5 are the prediction
    h.materialize(store.data_dir, "vague", ["vague_direct_rating_tasks"])
    tasks = h.tasks(ls, "direct_rating · vague")
    assert sorted(tasks) == ["fr_bicycle", "fr_kettle", "fr_laptop", "fr_umbrella"]
    assert {r["value"]["rating"] for r in tasks["fr_kettle"]["predictions"][0]["result"]} == {5}
    a, b = sr.reviewer(ls, "rater-a@example.org"), sr.reviewer(ls, "rater-b@example.org")
    rate(a, tasks["fr_umbrella"], "direct", relevance=2, solvability=4)  # below 4: dropped
    rate(a, tasks["fr_kettle"], "direct", relevance=5, solvability=5)
    rate(b, tasks["fr_bicycle"], "direct", relevance=7, solvability=5)  # outside 1-5: refused
    h.materialize(store.data_dir, "vague", ["vague_direct_rating_results"])
    res = h.results(store.data_dir, "vague__direct_rating")
    assert (res["fr_umbrella"]["decided_by"], res["fr_umbrella"]["keep"]) == ("human", False)
    assert (res["fr_bicycle"]["decided_by"], res["fr_bicycle"]["why_llm"], res["fr_bicycle"]["keep"]) == (
        "llm",
        "refused",
        True,
    )
    ans = store.read("protocol_answers", parts=["vague__direct_rating"])
    assert ans["refused"].dropna().tolist() == ["relevance: rating_out_of_range: 7 is not a whole number from 1 to 5"]

    _stages(store, llm, ["vague_indirect"])
    assert sorted(store.read("vague_indirect")["frame_id"]) == ["fr_bicycle", "fr_kettle"]  # umbrella: never asked

    # 2. indirect selection and rating (§4.2.2): the judge selected humour, rated 4
    h.materialize(store.data_dir, "vague", ["vague_indirect_selection_tasks"])
    itasks = h.tasks(ls, "indirect_selection · vague")
    pred = {r["from_name"]: r["value"] for r in itasks["fr_kettle"]["predictions"][0]["result"]}
    assert pred == {"selected": {"choices": ["humour"]}, "rating": {"rating": 4}}
    assert "Marie Kondo" in itasks["fr_kettle"]["data"]["candidates"]
    for person in (a, b):  # both raters: meme / idiom, rated 2
        sr.submit(
            ls,
            itasks["fr_kettle"],
            person,
            [h.choice("selected", "meme_idiom", "candidates"), h.rating("rating", 2, "candidates")],
        )
    sr.submit(
        ls,
        itasks["fr_bicycle"],
        a,
        [h.choice("selected", "sarcasm", "candidates"), h.rating("rating", 4, "candidates")],
    )
    h.materialize(store.data_dir, "vague", ["vague_indirect_selection_results"])
    ires = h.results(store.data_dir, "vague__indirect_selection")
    assert ires["fr_kettle"]["values"] == {"selected": "meme_idiom", "rating": 2.0} and not ires["fr_kettle"]["keep"]
    assert ires["fr_kettle"]["n_answers"] == 2 and ires["fr_kettle"]["changed"]
    assert ires["fr_bicycle"]["values"]["selected"] == "sarcasm" and ires["fr_bicycle"]["keep"]

    _stages(store, llm, ["vague_options", "vague_items"])
    assert sorted(store.read("vague_options")["frame_id"].unique()) == ["fr_bicycle"]  # kettle's is not used
    items = store.read("vague_items")
    assert items["unit_id"].tolist() == ["fr_bicycle"]
    assert items["category"].tolist() == ["sarcasm"] and "decorating with clutter" in items["question"].iloc[0]
