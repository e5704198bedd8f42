"""Provenance that cannot be laundered (issue 14, point 4): an item's lineage is every backend and
model behind it across stages, so re-running the last stage on a real backend does not relabel
stub-made upstream content, and the export guard refuses it."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from forge.llm.stub import StubOutputError, ensure_no_stub
from forge.provenance.lineage import decode, touched_by_stub
from resources.llm import LLMResource
from resources.storage import StorageResource
from tests.recipes.iibench.test_iibench_assets import (
    BATCH,
    responder,
    store,  # noqa: F401 (fixture)
)


def _run(store, llm, assets):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    return dg.materialize(
        assets,
        partition_key=BATCH,
        instance=instance,
        resources={"storage": StorageResource(data_dir=str(store.data_dir)), "llm": llm},
        run_config={"ops": {"iibench_labels": {"config": {"min_explanation_chars": 10}}}}
        if any(a.key.path[-1] == "iibench_labels" for a in assets)
        else {},
    )


def test_rerunning_the_last_stage_does_not_launder_stub_content(store, tmp_path, llm_double, llm_double_resource):
    from assets.recipes.iibench import assets as A

    stub = LLMResource(backend="stub", cache_path=str(tmp_path / "stub.sqlite"))
    assert _run(store, stub, [A.iibench_implication, A.iibench_labels, A.iibench_items]).success
    assert (store.read("iibench_items")["backend"] == "stub").all()

    # a key appears; only the last stage is re-run: its rows now say openai ...
    llm_double.responder = responder
    real = llm_double_resource()
    assert _run(store, real, [A.iibench_items]).success
    items = store.read("iibench_items")
    assert len(items) and (items["backend"] == "openai").all()
    # ... but their lineage still holds the stub-made labels and implication verdicts
    for value in items["lineage"]:
        lin = decode(value)
        assert set(lin["backends"]) == {"openai", "stub"} and "double-model" in lin["models"]
    with pytest.raises(StubOutputError, match="built from"):
        ensure_no_stub(items.assign(labels=json.dumps({})))  # even with the [stub] text stripped

    # re-running every stage on the real backend clears it
    assert _run(store, real, [A.iibench_implication, A.iibench_labels, A.iibench_items]).success
    items = store.read("iibench_items")
    assert len(items) and not any(touched_by_stub(v) for v in items["lineage"])
    ensure_no_stub(items)
