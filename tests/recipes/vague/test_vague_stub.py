"""VAGUE on the offline stub backend (the demo): placeholder verdicts are recorded, not applied."""

import json

import dagster as dg

from forge.llm.stub import ADVISORY_NOTE
from tests.recipes.vague.test_vague_assets import BATCH, FRAMES, data  # noqa: F401 - fixture


def test_vague_stub_run_yields_items(data, tmp_path, recipe_overrides):
    from assets.recipes.vague import assets as va
    from assets.recipes.vague import checks as pkg
    from resources.embedder import EmbedderResource
    from resources.llm import LLMResource
    from resources.storage import StorageResource

    # the fixture frames have tags but no detected persons
    recipe_overrides("vague", {"candidates": {"min_persons": 0, "max_per_batch": 10}})
    store = data
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    resources = {
        "storage": StorageResource(data_dir=str(store.data_dir)),
        "embedder": EmbedderResource(),
        "llm": LLMResource(backend="stub", cache_path=str(tmp_path / "c.sqlite")),
    }
    assets = [va.vague_candidates, va.vague_direct, va.vague_indirect, va.vague_options, va.vague_items]
    res = dg.materialize(
        assets + list(pkg.CHECKS),
        partition_key=BATCH,
        resources=resources,
        instance=instance,
        selection=[a.key for a in assets],
    )
    assert res.success
    items = store.read("vague_items")
    assert len(items) >= 1 and (items["backend"] == "stub").all()
    # every row says which settings profile made it: none named → the paper's
    assert items["profile"].tolist() == ["paper"] * len(items)
    labels = [json.loads(x) for x in items["labels"]]
    assert {x["object_source"] for x in labels} == {"tags"}
    # nothing was rejected for a verdict or a placeholder check
    rej = store.read("rejects")
    judged = {"low_direct_rating", "low_indirect_rating", "indirect_not_ambiguous", "duplicate_options"}
    assert not (set(rej["reason"]) & judged) if len(rej) else True
    assert not any(r.startswith("ne_") for r in rej["reason"]) if len(rej) else True
    # ...but what they would have said is on record
    assert len(items) == len(FRAMES)  # every candidate frame became an item
    notes = [n for e in items["extra"] for n in json.loads(e).get("advisory", [])]
    indirect = store.read("vague_indirect")
    assert indirect["advisory"].notna().any() or notes  # placeholder text is never "ambiguous"
    att = store.read("llm_attempts")
    assert att[att["step"].str.startswith("check:")]["advisory"].all()
    md = res.asset_materializations_for_node("vague_direct")[0].metadata
    assert md["stub_verdicts"].value == ADVISORY_NOTE
