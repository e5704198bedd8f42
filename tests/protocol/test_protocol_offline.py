"""A build with no Label Studio records who decided every protocol step (issue #53): each step's
results say ``decided_by = llm`` (``why_llm = no_label_studio``) for every unit, the stage that
used a step carries it on its rows, the items built from them carry it in ``extra.decided_by``,
and the card counts both kinds. Nothing listens on the review address: no server is started."""

from __future__ import annotations

import json

import dagster as dg

from assets.people.factory import people_defs
from forge.review.card import card_lines, human_figures
from forge.storage import TableStore
from resources.review import ReviewResource
from resources.storage import StorageResource
from tests.recipes.iibench.test_iibench_assets import BATCH, _frames
from tests.recipes.iibench.test_iibench_protocol import responder


def test_a_build_without_label_studio_says_the_llm_decided_every_step(
    llm_double, llm_double_resource, tmp_path, monkeypatch
):
    from assets.recipes.iibench import assets as A

    data = tmp_path / "data"
    store = TableStore(data)
    _frames(store, tmp_path)
    llm_double.responder = responder
    monkeypatch.setenv("SUBTEXT_REVIEW_POLICY", "required")  # the results record the LLM's under every policy
    down = ReviewResource(url="http://127.0.0.1:9", token="t")
    resources = {"storage": StorageResource(data_dir=str(data)), "review": down, "llm": llm_double_resource()}
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    recipe = [A.iibench_implication, A.iibench_labels, A.iibench_items]
    protocol = list(people_defs("iibench", "step").assets)
    config = {"ops": {"iibench_labels": {"config": {"min_explanation_chars": 20}}}}

    def stage(name: str) -> None:
        dg.materialize(recipe, selection=[name], partition_key=BATCH, instance=instance, resources=resources,
                       run_config=config if name == "iibench_labels" else None)  # fmt: skip

    stage("iibench_implication")
    assert dg.materialize(protocol, selection=["iibench_inspection_results"], resources=resources).success
    stage("iibench_labels")
    assert dg.materialize(protocol, selection=["iibench_labels_results"], resources=resources).success
    stage("iibench_items")

    for step, units in (("inspection", 4), ("labels", 4)):
        res = store.read("protocol_results", parts=[f"iibench__{step}"])
        assert len(res) == units and set(res["decided_by"]) == {"llm"} and set(res["why_llm"]) == {"no_label_studio"}
    labels = store.read("iibench_labels")
    assert len(labels) == 4 and {json.loads(v)["inspection"] for v in labels["decided_by"]} == {"llm"}
    items = store.read("iibench_items")
    assert len(items) and all(
        json.loads(e)["decided_by"] == {"inspection": "llm", "labels": "llm"} for e in items["extra"]
    )
    # the card's protocol section counts both kinds: 0 decided by people, every unit by the LLM and why
    section = "\n".join(card_lines({"policy": "advisory", "human_figures": human_figures(store, "iibench")})[1])
    assert "| inspection (iibench_implication) | 4 | 0 (0) | 4 (no_label_studio 4) |" in section
    assert "| labels (iibench_labels) | 4 | 0 (0) | 4 (no_label_studio 4) |" in section
