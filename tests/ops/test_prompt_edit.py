"""Re-run after a prompt edit, end to end, on a real recipe chain (II-Bench: implication → labels →
items) against the LLM double:

1. build the chain for one batch;
2. edit the implication prompt (a temp copy of the recipe, never the repo's file) → the asset's
   code_version changes, Dagster reports it STALE (cause: code version) and the outdated-prompt
   check counts the affected rows;
3. re-materialize only ``iibench_implication`` → only implication prompts hit the LLM again, and
   now its descendants are STALE (cause: new upstream data);
4. the descendants follow; their prompts did not change and neither did their inputs, so they
   are answered from the cache (no new LLM request), and everything is fresh again.
"""

from __future__ import annotations

import importlib.util
import itertools
import shutil
import sys
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.assets.graph.asset_graph import AssetGraph
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleCauseCategory, StaleStatus
from dagster._core.loader import LoadingContextForTest

from resources.storage import StorageResource
from tests.recipes.iibench.test_iibench_assets import BATCH, _frames, responder

ROOT = Path(__file__).resolve().parents[2]
CHAIN = ["iibench_implication", "iibench_labels", "iibench_items"]
_loads = itertools.count()


def load_recipe_copy(root: Path):
    """Import the recipe package from a copy under a fresh name, so PROMPTS and code_version follow
    the copy's files as they are now (the package imports its own modules relatively)."""
    name = f"iibench_copy_{next(_loads)}"
    loaded = root.parent / "loaded"
    shutil.copytree(root / "iibench", loaded / name)
    if str(loaded) not in sys.path:
        sys.path.insert(0, str(loaded))
    return importlib.import_module(f"{name}.assets")


@pytest.fixture
def recipe_copy(tmp_path) -> Path:
    """A copy of the II-Bench package (never the repo's files)."""
    shutil.copytree(
        ROOT / "assets" / "recipes" / "iibench",
        tmp_path / "copy" / "iibench",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return tmp_path / "copy"


def _graph_and_status(module, instance):
    graph = AssetGraph.from_assets([getattr(module, a) for a in CHAIN])
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    status = {a: resolver.get_status(dg.AssetKey(a), BATCH) for a in CHAIN}
    causes = {a: {c.category for c in resolver.get_stale_causes(dg.AssetKey(a), BATCH)} for a in CHAIN}
    return graph, status, causes


def _materialize(module, instance, storage, llm, names):
    return dg.materialize(
        [getattr(module, a) for a in CHAIN],
        selection=names,
        partition_key=BATCH,
        instance=instance,
        resources={"storage": storage, "llm": llm},
    )


def _schemas(requests) -> list[str]:
    return [(r["body"].get("response_format") or {}).get("json_schema", {}).get("name") for r in requests]


def test_prompt_edit_marks_stale_and_reruns_only_that_prompt(
    recipe_copy, tmp_path, monkeypatch, llm_double, llm_double_resource
):
    from assets.llm_support import outdated_prompt_check
    from forge.storage import TableStore

    store = TableStore(tmp_path / "data")
    _frames(store, tmp_path)
    storage = StorageResource(data_dir=str(store.data_dir))
    llm = llm_double_resource()
    llm_double.responder = responder
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])

    # 1. Build the chain; everything is fresh.
    v1 = load_recipe_copy(recipe_copy)
    assert _materialize(v1, instance, storage, llm, CHAIN).success
    graph, status, _ = _graph_and_status(v1, instance)
    assert set(status.values()) == {StaleStatus.FRESH}
    prompt = recipe_copy / "iibench" / "prompts" / "implication.yaml"
    # the recipe's own check (same factory and row filter), pointed at the copied prompt
    implication_prompt_current = outdated_prompt_check(
        "iibench_implication", "iibench_implication", [prompt], only={"origin": "llm"}
    )
    assert implication_prompt_current(storage).passed
    judged = store.query("select count(*) n from iibench_implication where origin = 'llm'")["n"][0]
    assert judged >= 2
    old_code = {a: graph.get(dg.AssetKey(a)).code_version for a in CHAIN}

    # 2. Edit the prompt: new code_version; stale asset + stale descendants; the check counts rows.
    text = prompt.read_text()
    assert "system: |\n" in text
    prompt.write_text(text.replace("system: |\n", "system: |\n  Be strict: a visual metaphor must be clear.\n", 1))
    v2 = load_recipe_copy(recipe_copy)
    graph2, status, causes = _graph_and_status(v2, instance)
    new_code = {a: graph2.get(dg.AssetKey(a)).code_version for a in CHAIN}
    assert new_code["iibench_implication"] != old_code["iibench_implication"]
    assert new_code["iibench_labels"] == old_code["iibench_labels"]
    assert status["iibench_implication"] == StaleStatus.STALE
    assert causes["iibench_implication"] == {StaleCauseCategory.CODE}
    # Dagster 1.13 marks descendants only once the parent's data version actually changes (step 3);
    # the UI shows the same. The edited asset is the one to re-run, and that is what it flags.
    assert status["iibench_labels"] == status["iibench_items"] == StaleStatus.FRESH
    check = implication_prompt_current(storage)
    assert not check.passed and check.metadata["outdated_rows"].value == judged

    # 3. Re-materialize only the edited asset: only its prompt goes to the LLM again.
    before = len(llm_double.requests)
    assert _materialize(v2, instance, storage, llm, ["iibench_implication"]).success
    rerun = _schemas(llm_double.requests[before:])
    assert rerun and set(rerun) == {"iibench_implication"} and len(rerun) == judged
    assert implication_prompt_current(storage).passed
    _, status, _ = _graph_and_status(v2, instance)
    assert status["iibench_implication"] == StaleStatus.FRESH
    _, status, causes = _graph_and_status(v2, instance)
    assert status["iibench_labels"] == StaleStatus.STALE  # its input was rewritten (new data version)
    assert causes["iibench_labels"] == {StaleCauseCategory.DATA}

    # 4. Descendants follow: unchanged prompts and inputs → answered from the cache.
    before = len(llm_double.requests)
    result = _materialize(v2, instance, storage, llm, ["iibench_labels", "iibench_items"])
    assert result.success
    assert len(llm_double.requests) == before
    md = result.asset_materializations_for_node("iibench_labels")[0].metadata
    assert md["llm_cache_hits"].value > 0 and md["llm_calls"].value == 0
    _, status, _ = _graph_and_status(v2, instance)
    assert set(status.values()) == {StaleStatus.FRESH}
