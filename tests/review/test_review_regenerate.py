""" "Regenerate rejected" on ViMU end to end: a reviewer rejects a clip's item in Label Studio,
the stage that made the faulted field (an OE answer: vimu_questions) asks again for that clip only,
the other clips' requests come from the LLM cache, the new version gets a new review task and the old verdict stays, stale.

Then the same hook in the generating stage of II-Bench, VAGUE, Hummus and MAIA (stub backend, no
server: the reject verdict is written in the ``verdicts`` shape the review stage writes)."""

from __future__ import annotations

import json

import dagster as dg
import pandas as pd
import pytest

from assets.people.factory import people_defs
from assets.recipes.vimu.assets import vimu_annotations, vimu_items, vimu_questions
from assets.recipes.vimu.checks import CHECKS
from assets.recipes.vimu.logic.items import item_id
from forge.storage import TableStore
from forge.storage.contracts import load_contract
from resources.llm import LLMResource
from resources.review import ReviewResource
from resources.storage import StorageResource
from tests.recipes.maia.test_maia_assets import corpus  # noqa: F401 - fixture
from tests.recipes.vague.test_vague_assets import data  # noqa: F401 - fixture
from tests.recipes.vimu.test_assets import BATCH, seed_upstream
from tests.review import scripted as sr
from tests.review import world


def _gate(store: TableStore) -> None:
    """The built items as the gates would pass them (split test, one group per clip)."""
    items = store.read("vimu_items")
    rows = items.assign(split="test", group_id=items["unit_id"], reshuffled=False, lineage=None)
    world.write_gated(store, "vimu", rows.to_dict("records"))


def _review(data, key: str) -> None:
    llm = LLMResource(backend="stub", cache_path=str(data / "cache" / "llm_cache.sqlite"))
    res = {"storage": StorageResource(data_dir=str(data)), "review": ReviewResource(), "llm": llm}
    dg.materialize(list(people_defs("vimu", "review").assets), selection=[key], resources=res)


def _questions(store: TableStore) -> dict[str, str]:
    return dict(zip(store.read("vimu_questions")["clip_id"], store.read("vimu_questions")["question"], strict=True))


def _paid(store: TableStore) -> pd.DataFrame:
    calls = store.read("llm_calls")
    calls = calls[calls["stage"] == "vimu_questions"]
    return calls[~calls["cache_hit"].astype(bool)]


@pytest.mark.slow  # the shared real Label Studio server
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
    tasks = sr.tasks_by_item(ls, "review · vimu")  # one task per clip, ViMU's review unit
    bad, good = item_id("clip_pass", "OE"), item_id("clip_minor", "OE")
    r1 = sr.reviewer(ls, "r1@review.test")
    # an OE reference answer is vimu_questions' (spec): the OE member rejected, the clip's others accepted
    sr.submit(ls, tasks["unit:clip_pass"], r1, sr.reject_member(tasks["unit:clip_pass"], bad, "wrong_gold"))
    sr.submit(ls, tasks["unit:clip_minor"], r1, sr.ACCEPT)
    _review(data, "vimu_review_results")

    build(vimu_questions, vimu_items)  # what `cli.build --select vimu_questions vimu_items ...` runs
    second = _questions(store)
    assert second["clip_pass"] != first["clip_pass"]  # the rejected clip was asked again
    assert {c: q for c, q in second.items() if c != "clip_pass"} == {c: q for c, q in first.items() if c != "clip_pass"}
    paid = _paid(store)
    assert set(paid["item_id"]) == {"clip_pass"}  # every other clip's request came from the cache

    _gate(store)
    _review(data, "vimu_review_tasks")
    _review(data, "vimu_review_results")
    new = sr.tasks_by_item(ls, "review · vimu")
    oe = next(m for m in new["unit:clip_pass"]["data"]["members"] if m["item_id"] == bad)
    assert new["unit:clip_pass"]["id"] != tasks["unit:clip_pass"]["id"] and second["clip_pass"] in oe["text"]
    assert new["unit:clip_minor"]["id"] == tasks["unit:clip_minor"]["id"]  # an unchanged clip keeps its task
    v = store.read("verdicts", parts=["vimu"]).set_index("item_id")
    assert (
        v.loc[bad, "verdict"] == "reject" and bool(v.loc[bad, "stale"]) and v.loc[bad, "stale_reason"] == "item_changed"
    )
    assert not bool(v.loc[good, "stale"])

    build(vimu_questions)  # a plain re-run replays the regenerated reply; nothing is paid twice
    assert _questions(store) == second and _paid(store).empty


# -- the other papers: the same hook, checked on the generating stage alone (fast, no server) ------


def _reject(store: TableStore, bench: str, items: pd.DataFrame, rejected: str) -> None:
    """``items`` as the gates pass them, and one reviewer's reject of ``rejected``."""
    rows = items.assign(split="test", group_id=items["unit_id"], reshuffled=False, lineage=None)
    world.write_gated(store, bench, rows.to_dict("records"))
    now = pd.Timestamp.now(tz="UTC")
    verdict = {
        **dict.fromkeys(load_contract("verdicts").column_names),
        **{"verdict_id": "1:1", "benchmark": bench, "item_id": rejected, "revision": "r1", "project_kind": "review"},
        **{"project_id": 1, "task_id": 1, "reviewer": "r1@review.test", "verdict": "reject", "reason": "ambiguous"},
        **{"seconds": 4.0, "created_at": now, "updated_at": now, "stale": False, "polled_at": now},
    }
    c = load_contract("verdicts")
    store.write("verdicts", c.conform(pd.DataFrame([verdict])), bench, schema=c.arrow_schema())


def _paid_in(store: TableStore, stage: str) -> pd.DataFrame:
    calls = store.read("llm_calls")
    calls = calls[calls["stage"] == stage]
    return calls[~calls["cache_hit"].astype(bool)]


@pytest.fixture
def one_reviewer(monkeypatch, tmp_path):
    """One reject decides (II-Bench's paper default is three reviewers)."""
    cfg = tmp_path / "review.yaml"
    cfg.write_text("benchmarks:\n" + "".join(f"  {b}: {{reviewers: 1}}\n" for b in CASES))
    monkeypatch.setenv("SUBTEXT_REVIEW_CONFIG", str(cfg))


def _builder(chain: list, batch: str, resources: dict, stage: str, checks=()):
    """Materialize ``chain`` (and the checks) on one batch; ``regen`` is the stage's run-config flag."""
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [batch])

    def build(regen: bool = True) -> None:
        res = dg.materialize(
            chain + list(checks),
            partition_key=batch,
            instance=instance,
            resources=resources,
            selection=[a.key for a in chain],
            run_config={"ops": {stage: {"config": {"regenerate_rejected": regen}}}},
        )
        assert res.success

    return build


def _iibench(request, stub, tmp_path):
    from assets.recipes.iibench import assets as ia
    from tests.recipes.iibench.test_iibench_assets import BATCH as IB
    from tests.recipes.iibench.test_iibench_assets import _frames

    store = TableStore(tmp_path / "data")
    _frames(store, tmp_path)
    res = {"storage": StorageResource(data_dir=str(store.data_dir)), "llm": stub}
    return store, _builder([ia.iibench_implication, ia.iibench_labels, ia.iibench_items], IB, res, "iibench_items")


def _hummus(request, stub, tmp_path):
    from assets.recipes.hummus import assets as ha
    from tests.recipes.hummus.test_hummus_assets import BATCH as HB
    from tests.recipes.hummus.test_hummus_assets import CAPTIONS, image_store

    store = image_store(tmp_path, CAPTIONS, HB)
    res = {"storage": StorageResource(data_dir=str(store.data_dir)), "llm": stub}
    return store, _builder([ha.hummus_pairs, ha.hummus_annotations, ha.hummus_items], HB, res, "hummus_annotations")


def _vague(request, stub, tmp_path):
    from assets.recipes.vague import assets as va
    from assets.recipes.vague import checks as pkg
    from resources.embedder import EmbedderResource
    from tests.recipes.vague.test_vague_assets import BATCH as VB

    request.getfixturevalue("recipe_overrides")("vague", {"candidates": {"min_persons": 0, "max_per_batch": 10}})
    store = request.getfixturevalue("data")  # the VAGUE fixture frames (tests/recipes/vague)
    res = {"storage": StorageResource(data_dir=str(store.data_dir)), "embedder": EmbedderResource(), "llm": stub}
    chain = [va.vague_candidates, va.vague_direct, va.vague_indirect, va.vague_options, va.vague_items]
    return store, _builder(chain, VB, res, "vague_indirect", pkg.CHECKS)


def _maia(request, stub, tmp_path):
    from resources.nli import NLIResource
    from tests.recipes.maia.test_maia_assets import ALL

    store = request.getfixturevalue("corpus")  # the MAIA fixture clip (tests/recipes/maia)
    res = {"storage": StorageResource(data_dir=str(store.data_dir)), "llm": stub, "nli": NLIResource(backend="llm")}
    return store, _builder(list(ALL), "b1", res, "maia_foils")


# paper → (setup, generating stage); MAIA's `ambiguous` faults a pair's foil: the foil stage asks again
# for that pair alone (its requests are the statement ids "<question id>_s<i>")
CASES = {
    "iibench": (_iibench, "iibench_items"),
    "hummus": (_hummus, "hummus_annotations"),
    "vague": (_vague, "vague_indirect"),
    "maia": (_maia, "maia_foils"),
}


def _unit(bench: str, item: dict) -> str:
    return str(json.loads(item["labels"])["question_id"] if bench == "maia" else item["unit_id"])


def _content(items: pd.DataFrame, bench: str, unit: str) -> set:
    rows = [r for r in items.to_dict("records") if _unit(bench, r) == unit]
    return {
        (r["question"], json.dumps(list(r["options"]) if r["options"] is not None else None), r["answer"]) for r in rows
    }


@pytest.mark.parametrize("bench", list(CASES))
def test_each_paper_regenerates_only_the_rejected_unit(bench, request, one_reviewer, tmp_path):
    setup, stage = CASES[bench]
    stub = LLMResource(backend="stub", cache_path=str(tmp_path / "regen-cache.sqlite"))
    store, build = setup(request, stub, tmp_path)
    build()
    items = store.read(f"{bench}_items")
    units = {_unit(bench, r) for r in items.to_dict("records")}
    assert len(units) >= 2, "the check needs a rejected and a kept unit"
    unit = _unit(bench, items.iloc[0].to_dict())
    _reject(store, bench, items, str(items.iloc[0]["item_id"]))

    build(regen=False)  # switched off: the first replies are replayed, nothing is paid
    assert _paid_in(store, stage).empty

    build()  # the rejected unit is asked again; every other request comes from the cache
    paid = set(_paid_in(store, stage)["item_id"].astype(str))
    assert paid and all(c == unit or (bench == "maia" and c.startswith(f"{unit}_")) for c in paid), sorted(paid)
    after = store.read(f"{bench}_items")
    assert _content(after, bench, unit) != _content(items, bench, unit)  # the unit's items were rewritten
    for other in units - {unit}:
        assert _content(after, bench, other) == _content(items, bench, other)  # the others are unchanged

    build()  # a plain re-run replays the regenerated replies: nothing is paid twice
    assert _paid_in(store, stage).empty
