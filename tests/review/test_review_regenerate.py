""" "Regenerate rejected" on ViMU end to end: a reviewer rejects a clip's item in Label Studio,
the generating stage (vimu_questions) asks again for that clip only, the other clips' requests come
from the LLM cache, the new version gets a new review task and the old verdict stays, stale."""

from __future__ import annotations

import dagster as dg
import pandas as pd
import pytest

from assets.recipes.vimu import CHECKS
from assets.recipes.vimu.assets import vimu_annotations, vimu_items, vimu_questions
from assets.review.factory import benchmark_review_defs
from forge.recipes.vimu.items import item_id
from forge.storage import TableStore
from resources.llm import LLMResource
from resources.review import ReviewResource
from resources.storage import StorageResource
from tests.recipes.vimu.test_assets import BATCH, seed_upstream
from tests.review import scripted as sr
from tests.review import world

pytestmark = pytest.mark.slow  # the shared real Label Studio server


def _gate(store: TableStore) -> None:
    """The built items as the gates would pass them (split test, one group per clip)."""
    items = store.read("vimu_items")
    rows = items.assign(split="test", group_id=items["unit_id"], reshuffled=False, lineage=None)
    world.write_gated(store, "vimu", rows.to_dict("records"))


def _review(data, key: str) -> None:
    llm = LLMResource(backend="stub", cache_path=str(data / "cache" / "llm_cache.sqlite"))
    res = {"storage": StorageResource(data_dir=str(data)), "review": ReviewResource(), "llm": llm}
    dg.materialize(list(benchmark_review_defs("vimu").assets), selection=[key], resources=res)


def _questions(store: TableStore) -> dict[str, str]:
    return dict(zip(store.read("vimu_questions")["clip_id"], store.read("vimu_questions")["question"], strict=True))


def _paid(store: TableStore) -> pd.DataFrame:
    calls = store.read("llm_calls")
    calls = calls[calls["stage"] == "vimu_questions"]
    return calls[~calls["cache_hit"].astype(bool)]


def test_regenerate_rejected_asks_again_for_rejected_items_only(review_env, tmp_path):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  vimu: {reviewers: 1}\n")
    store = TableStore(data)
    seed_upstream(store)
    clips = store.read("clips")  # the clip files the review form plays
    clips["path"] = "media/clips/" + clips["clip_id"] + ".mp4"
    for rel in clips["path"]:
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).write_bytes(b"\x00\x00\x00\x18ftypmp42")
    store.write("clips", clips, BATCH)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    resources = {
        "storage": StorageResource(data_dir=str(data)),
        "llm": LLMResource(backend="stub", cache_path=str(tmp_path / "cache.sqlite")),
    }

    def build(*assets) -> None:
        for a in assets:
            dg.materialize([a, *CHECKS], partition_key=BATCH, instance=instance, resources=resources, selection=[a.key])

    build(vimu_annotations, vimu_questions, vimu_items)
    first = _questions(store)
    _gate(store)
    _review(data, "vimu_review_tasks")
    tasks = sr.tasks_by_item(ls, "vimu v1")
    bad, good = item_id("clip_pass", "OE"), item_id("clip_minor", "OE")
    r1 = ls.ensure_user("r1@review.test")
    sr.submit(ls, tasks[bad], r1, sr.reject("ambiguous"))
    sr.submit(ls, tasks[good], r1, sr.ACCEPT)
    _review(data, "vimu_verdicts")

    build(vimu_questions, vimu_items)  # what `jobs.build --select vimu_questions vimu_items ...` runs
    second = _questions(store)
    assert second["clip_pass"] != first["clip_pass"]  # the rejected clip was asked again
    assert {c: q for c, q in second.items() if c != "clip_pass"} == {c: q for c, q in first.items() if c != "clip_pass"}
    paid = _paid(store)
    assert set(paid["item_id"]) == {"clip_pass"}  # every other clip's request came from the cache

    _gate(store)
    _review(data, "vimu_review_tasks")
    _review(data, "vimu_verdicts")
    new = sr.tasks_by_item(ls, "vimu v1")
    assert new[bad]["id"] != tasks[bad]["id"] and new[bad]["data"]["question"] == second["clip_pass"]
    assert new[good]["id"] == tasks[good]["id"]  # an unchanged item keeps its task and verdict
    v = store.read("verdicts", parts=["vimu"]).set_index("item_id")
    assert (
        v.loc[bad, "verdict"] == "reject" and bool(v.loc[bad, "stale"]) and v.loc[bad, "stale_reason"] == "item_changed"
    )
    assert not bool(v.loc[good, "stale"])

    build(vimu_questions)  # a plain re-run replays the regenerated reply; nothing is paid twice
    assert _questions(store) == second and _paid(store).empty
