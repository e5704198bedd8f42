"""Every recipe chain over HTTP against the plausible test model (tests/llm_double/plausible.py):
the run succeeds, items come out, the scripted flaws are rejected with a reason, nothing says stub.
(The whole demo graph against the same model is tests/e2e/test_nonstub.py.)"""

from __future__ import annotations

import dagster as dg
import pytest

from resources.storage import StorageResource
from tests.llm_double.plausible import Plausible
from tests.recipes.test_empty_batches import PAPERS, _chain, _seed, hummus_store, iibench_store, maia_store, vague_store  # noqa: F401


@pytest.mark.parametrize("paper", PAPERS)
def test_recipe_chain_against_the_plausible_model(
    paper, request, tmp_path, recipe_overrides, llm_double, llm_double_resource
):
    assets, batch, extra = _chain(paper, recipe_overrides)
    store = _seed(paper, request, tmp_path)
    if paper == "maia":  # the paper's foil rounds, not the fixture's 1: one bad foil costs its whole pool
        recipe_overrides("maia", {"foils": {"max_rounds": 3}})
    # a few items per chain: one item per prompt keeps its flaw (stubborn), so a flaw is always exercised
    model = Plausible(seed=11, p_flaw=0.3, stubborn={"hummus_annotate": 1} if paper == "hummus" else 0)
    llm_double.responder = model
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [batch])
    resources = {"storage": StorageResource(data_dir=str(store.data_dir)), "llm": llm_double_resource(), **extra}
    res = dg.materialize(assets, partition_key=batch, instance=instance, resources=resources, raise_on_error=False)
    assert res.success, [e.event_specific_data.error.message for e in res.all_events if e.is_step_failure]
    items = store.read(assets[-1].key.path[-1])
    assert len(items) > 0, store.read("rejects")[["stage", "reason", "detail"]].to_string()
    assert not (items["backend"] == "stub").any()
    assert (items["profile"] == "paper").all()  # no profile named: the rows say the paper's settings made them
    assert not items["lineage"].fillna("").str.contains('"stub"').any()
    assert any(mode == "flaw" for (_, mode) in model.counts)
