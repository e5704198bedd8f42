"""VAGUE's human steps on a real Label Studio with scripted raters, through the real stages (LLM
test double). People decide, the LLM judge is advisory: raters see every direct expression, the
one the judge dropped included, with the judge's ratings hidden; one the judge dropped and people
rated 5 is used (it gets an indirect expression and an item), one the judge kept and people rated
2 is not; a rating of 7 is refused and the judge's stands. People's indirect selection replaces
the judge's, and a candidate its raters rated 2 is not used: no options, no item."""

from __future__ import annotations

import json
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
    assert not store.read("vague_direct").set_index("frame_id").loc["fr_lamp", "judge_keep"]  # the judge's 2

    # 1. direct ratings (§4.2.1): every expression, the one the judge dropped too; its ratings hidden
    h.materialize(store.data_dir, "vague", ["vague_direct_rating_tasks"])
    tasks = h.tasks(ls, "direct_rating · vague")
    assert sorted(tasks) == ["fr_bicycle", "fr_kettle", "fr_lamp", "fr_laptop", "fr_umbrella"]
    for t in tasks.values():  # the form as Label Studio returns it: no prediction, no rating, no rationale
        full = ls.request("GET", f"/api/tasks/{t['id']}")
        assert not full["predictions"] and set(full["data"]) == {"image", "direct", "unit_id"}
    a, b = sr.reviewer(ls, "rater-a@example.org"), sr.reviewer(ls, "rater-b@example.org")
    rate(a, tasks["fr_umbrella"], "direct", relevance=2, solvability=4)  # the judge kept it; people: 2, dropped
    rate(a, tasks["fr_lamp"], "direct", relevance=5, solvability=5)  # the judge dropped it; people: 5, used
    rate(a, tasks["fr_kettle"], "direct", relevance=5, solvability=5)
    rate(b, tasks["fr_bicycle"], "direct", relevance=7, solvability=5)  # outside 1-5: refused
    h.materialize(store.data_dir, "vague", ["vague_direct_rating_results"])
    res = h.results(store.data_dir, "vague__direct_rating")
    assert (res["fr_umbrella"]["decided_by"], res["fr_umbrella"]["keep"]) == ("human", False)
    assert (res["fr_lamp"]["decided_by"], res["fr_lamp"]["keep"], res["fr_lamp"]["changed"]) == ("human", True, True)
    assert (res["fr_bicycle"]["decided_by"], res["fr_bicycle"]["why_llm"], res["fr_bicycle"]["keep"]) == (
        "llm",
        "refused",
        True,
    )
    ans = store.read("protocol_answers", parts=["vague__direct_rating"])
    assert ans["refused"].dropna().tolist() == ["relevance: rating_out_of_range: 7 is not a whole number from 1 to 5"]

    _stages(store, llm, ["vague_indirect"])
    # the lamp people rated 5 goes on; the umbrella people rated 2 does not
    assert sorted(store.read("vague_indirect")["frame_id"]) == ["fr_bicycle", "fr_kettle", "fr_lamp"]
    # the stage says who decided each rating it used, and who dropped the umbrella (issue #53)
    by = {
        r["frame_id"]: json.loads(r["decided_by"])["direct_rating"]
        for r in store.read("vague_indirect").to_dict("records")
    }
    assert by == {"fr_bicycle": "llm", "fr_kettle": "human", "fr_lamp": "human"}
    rej = store.read("rejects")
    (row,) = rej[(rej["stage"] == "vague_indirect") & (rej["reason"] == "dropped_by_people")].to_dict("records")
    assert row["item_id"] == "fr_umbrella" and "rater-a@example.org" in row["detail"]

    # 2. indirect selection and rating (§4.2.2): the judge selected humour, rated 4 (hidden)
    h.materialize(store.data_dir, "vague", ["vague_indirect_selection_tasks"])
    itasks = h.tasks(ls, "indirect_selection · vague")
    assert not itasks["fr_kettle"]["predictions"]
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
    # the read writes the step's agreement: the kettle, the one unit both raters answered, alike
    agree = store.read("protocol_agreement", parts=["vague__indirect_selection"]).set_index("field")
    assert sorted(agree.index) == ["rating", "selected"] and (agree["units"] == 1).all()
    assert (agree["observed_agreement"] == 1).all() and agree["fleiss_kappa"].isna().all()  # one value: undefined
    assert store.read("protocol_agreement", parts=["vague__direct_rating"]).empty  # one rater per unit

    _stages(store, llm, ["vague_options", "vague_items"])
    # kettle's is not used; the lamp, dropped by the judge and rated 5 by people, is
    assert sorted(store.read("vague_options")["frame_id"].unique()) == ["fr_bicycle", "fr_lamp"]
    items = store.read("vague_items").set_index("unit_id")
    assert sorted(items.index) == ["fr_bicycle", "fr_lamp"]
    assert items.loc["fr_bicycle", "category"] == "sarcasm"
    assert "decorating with clutter" in items.loc["fr_bicycle", "question"]
