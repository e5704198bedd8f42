"""On the offline stub backend (what the demo uses) the chain completes and marks its rows stub."""

from __future__ import annotations

import dagster as dg

from assets.recipes.vimu.assets import vimu_annotations, vimu_items, vimu_questions
from assets.recipes.vimu.checks import CHECKS
from forge.storage import TableStore
from resources.llm import LLMResource
from resources.storage import StorageResource
from tests.recipes.vimu.test_assets import BATCH, SCENARIOS, seed_upstream


def test_stub_chain_completes(tmp_path):
    store = TableStore(tmp_path / "data")
    seed_upstream(store)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    resources = {
        "storage": StorageResource(data_dir=str(store.data_dir)),
        "llm": LLMResource(backend="stub", cache_path=str(tmp_path / "cache.sqlite")),
    }
    for asset in (vimu_annotations, vimu_questions, vimu_items):
        assert dg.materialize(
            [asset, *CHECKS], partition_key=BATCH, instance=instance, resources=resources, selection=[asset.key]
        ).success
    ann = store.read("vimu_annotations")
    # stub placeholders never filter a clip (external context / ambiguity flags are not judgments)
    assert len(ann) == len(SCENARIOS) and set(ann["backend"]) == {"stub"}
    q = store.read("vimu_questions")
    # the validator's (random) stub verdicts and the hint check are recorded, never applied
    assert len(q) == len(ann) and (q["rounds"] == 0).all()
    att = store.read("llm_attempts")
    judged = att[att["step"] == "judge"]
    assert len(judged) == len(ann) and judged["advisory"].all() and judged["verdict"].notna().all()
    items = store.read("vimu_items")
    assert set(items["backend"]) <= {"stub"} and set(items["unit_id"]) == set(q["clip_id"])


def test_empty_batch_publishes_empty_tables(tmp_path):
    """A batch with no clips (e.g. an image source's) yields empty tables with their columns, not a failure."""
    store = TableStore(tmp_path / "data")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", ["images-0000"])
    resources = {
        "storage": StorageResource(data_dir=str(store.data_dir)),
        "llm": LLMResource(backend="stub", cache_path=str(tmp_path / "cache.sqlite")),
    }
    for asset in (vimu_annotations, vimu_questions, vimu_items):
        assert dg.materialize(
            [asset, *CHECKS], partition_key="images-0000", instance=instance, resources=resources, selection=[asset.key]
        ).success
        assert store.read(asset.key.path[-1]).empty
