"""No recipe asset crashes on an empty batch (issue 14, point 3).

For every paper's chain, three ways a batch ends up with nothing to carry forward:

* ``no_input``    — the batch has no upstream rows at all (an image batch seen by a video recipe);
* ``all_failed``  — every LLM call fails (HTTP 400, not retried): each item is a reject row;
* ``all_rejected``— every reply is schema-valid but fails the recipe's own checks (the double's
                    placeholder text on a real backend, where checks apply).

Each run must succeed, publish (possibly empty) tables, and, when there was input, account for
it in ``rejects``.
"""

from __future__ import annotations

import dagster as dg
import pytest

from forge.storage import TableStore
from resources.storage import StorageResource
from tests.llm_double import Reply
from tests.recipes.hummus.test_hummus_assets import store as hummus_store  # noqa: F401 (fixture)
from tests.recipes.iibench.test_iibench_assets import store as iibench_store  # noqa: F401 (fixture)
from tests.recipes.maia.test_maia_assets import corpus as maia_store  # noqa: F401 (fixture)
from tests.recipes.vague.test_vague_assets import data as vague_store  # noqa: F401 (fixture)


def _chain(paper: str, recipe_overrides) -> tuple[list, str, dict]:
    if paper == "hummus":
        from assets.recipes.hummus import assets as A

        return [A.hummus_pairs, A.hummus_annotations, A.hummus_items], "capcon-0000", {}
    if paper == "iibench":
        from assets.recipes.iibench import assets as A

        return [A.iibench_implication, A.iibench_labels, A.iibench_items], "imgs-0000", {}
    if paper == "maia":
        from assets.recipes.maia import assets as A
        from resources.nli import NLIResource

        return (
            [A.maia_questions, A.maia_answer_pools, A.maia_statements, A.maia_foils, A.maia_items],
            "b1",
            {"nli": NLIResource(backend="llm")},
        )
    if paper == "vague":
        from assets.recipes.vague import assets as A
        from resources.embedder import EmbedderResource

        # the fixture frames have tags but no detected persons
        recipe_overrides("vague", {"candidates": {"min_persons": 0, "max_per_batch": 10}})
        return (
            [A.vague_candidates, A.vague_direct, A.vague_indirect, A.vague_options, A.vague_items],
            "b1",
            {"embedder": EmbedderResource()},
        )
    from assets.recipes.vimu.assets import vimu_annotations, vimu_items, vimu_questions

    return [vimu_annotations, vimu_questions, vimu_items], "demo-0000", {}


def _seed(paper: str, request, tmp_path) -> TableStore:
    if paper == "vimu":
        from tests.recipes.vimu.test_assets import seed_upstream

        store = TableStore(tmp_path / "data")
        seed_upstream(store)
        return store
    return request.getfixturevalue(f"{paper}_store")


PAPERS = ["hummus", "iibench", "maia", "vague", "vimu"]


@pytest.mark.parametrize("mode", ["no_input", "all_failed", "all_rejected"])
@pytest.mark.parametrize("paper", PAPERS)
def test_recipe_chain_survives_an_empty_batch(
    paper, mode, request, tmp_path, monkeypatch, recipe_overrides, llm_double, llm_double_resource
):
    assets, batch, extra = _chain(paper, recipe_overrides)
    store = TableStore(tmp_path / "empty") if mode == "no_input" else _seed(paper, request, tmp_path)
    if mode == "all_failed":
        llm_double.responder = lambda body: Reply.error(400, "scripted: request refused")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [batch])
    resources = {"storage": StorageResource(data_dir=str(store.data_dir)), "llm": llm_double_resource(), **extra}
    res = dg.materialize(assets, partition_key=batch, instance=instance, resources=resources, raise_on_error=False)
    failures = [e.event_specific_data.error.message for e in res.all_events if e.is_step_failure]
    assert res.success, failures
    for a in assets:
        assert store.exists(a.key.path[-1]), f"{a.key.path[-1]} was not published"
    last = store.read(assets[-1].key.path[-1])
    if mode == "no_input":
        assert last.empty and not llm_double.chat_requests
        return
    rejects = store.read("rejects")
    assert len(rejects) > 0
    if mode == "all_failed":
        assert last.empty
        assert rejects["reason"].str.contains("fail").any(), rejects["reason"].value_counts()


def test_everything_rejected_fails_the_reject_rate_check(request, llm_double, llm_double_resource):
    """II-Bench labels: every explanation too short after K rounds → all rejected → reject_rate fails (ERROR)."""
    from assets.recipes.iibench import assets as A
    from tests.recipes.iibench.test_iibench_assets import responder

    store = request.getfixturevalue("iibench_store")

    def short_labels(body):
        name = (body.get("response_format") or {}).get("json_schema", {}).get("name")
        if name == "iibench_implication":  # every candidate kept, so the labels stage sees 4 images
            return {"has_implication": True, "implication": "time is wasted", "reason": "a visual metaphor"}
        out = responder(body)
        return dict(out, explanation="too short") if name == "iibench_labels" else out

    llm_double.responder = short_labels
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", ["imgs-0000"])
    res = dg.materialize(
        [A.iibench_implication, A.iibench_labels],
        partition_key="imgs-0000",
        instance=instance,
        resources={"storage": StorageResource(data_dir=str(store.data_dir)), "llm": llm_double_resource()},
        run_config={"ops": {"iibench_labels": {"config": {"max_rounds": 1}}}},
    )
    checks = {(e.asset_key.path[-1], e.check_name): e for e in res.get_asset_check_evaluations()}
    labels = checks[("iibench_labels", "reject_rate")]
    assert not labels.passed and labels.severity == dg.AssetCheckSeverity.ERROR
    assert labels.metadata["reject_rate"].value == 1.0 and labels.metadata["kept"].value == 0
    assert checks[("iibench_implication", "reject_rate")].passed
