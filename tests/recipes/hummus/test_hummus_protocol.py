"""Hummus's human step on a real Label Studio: the expert writes the annotation (verdict, metaphors,
boxes, caption spans, explanation) on their own: the form carries nothing of the LLM's draft (no
prediction, no draft text, as Label Studio's API returns the task) and no gold; the expert's
annotation replaces the LLM's, and the items stage builds the pair's items from it, the other
pair's from the LLM's."""

from __future__ import annotations

import json

import dagster as dg
import pandas as pd
import pytest

from forge.storage import TableStore
from forge.storage.contracts import load_contract
from resources.storage import StorageResource
from tests.protocol import helpers as h
from tests.review import scripted as sr
from tests.review import world

pytestmark = pytest.mark.slow  # a real Label Studio server

BATCH = "cartoons-0000"
CAPTION = "Time flies when you are having fun."


def _write(store: TableStore, table: str, rows: list[dict]) -> None:
    c = load_contract(table)
    store.write(table, c.conform(pd.DataFrame(rows)), BATCH, schema=c.arrow_schema())


def llm_annotation(data, name: str) -> tuple[dict, dict]:
    """The LLM's annotation of one pair (one region: the clock), as hummus_annotations holds it."""
    path = world.image(data, name, (200, 180, 40), size=(200, 100))
    ann = {
        "annotation_id": f"hma_{name}",
        "frame_id": f"fr_{name}",
        "batch": BATCH,
        "item_id": f"it_{name}",
        "source": "cartoons",
        "path": path,
        "width": 200,
        "height": 100,
        "caption": CAPTION,
        "caption_origin": "source",
        "verdict": "Yes",
        "incongruities": ["a clock with wings"],
        "resolution": "time passes quickly",
        "metaphors": ["TIME IS MONEY"],
        "caption_highlighted": "Time <i>flies</i> when you are having fun.",
        "span_texts": ["flies"],
        "span_starts": [5],
        "span_ends": [10],
        "explanation": "The LLM draft explanation.",
        "explanation_words": 4,
        "devices": [],
        "discard_reason": None,
        "n_regions": 1,
        "repairs": [],
        "rounds": 0,
        "prompt_hash": "p1",
        "model": "gpt-test",
        "backend": "openai",
        "advisory": None,
        "detail_reject": None,
        "detail_problems": [],
    }
    region = {
        "annotation_id": f"hma_{name}",
        "region_index": 0,
        "frame_id": f"fr_{name}",
        "batch": BATCH,
        "label": "clock",
        "box_px_x0": 20,
        "box_px_y0": 10,
        "box_px_x1": 60,
        "box_px_y1": 50,
        "box_norm_top": 0.1,
        "box_norm_left": 0.1,
        "box_norm_height": 0.4,
        "box_norm_width": 0.2,
        "image_width": 200,
        "image_height": 100,
    }
    return ann, region


def _items(data) -> None:
    from assets.recipes.hummus import assets as A

    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    res = dg.materialize(
        [A.hummus_items],
        partition_key=BATCH,
        instance=instance,
        resources={"storage": StorageResource(data_dir=str(data))},
    )
    assert res.success


def answers(data) -> dict[tuple[str, str], str]:
    items = TableStore(data).read("hummus_items")
    return {(json.loads(r["extra"])["annotation_id"], r["task"]): r["answer"] for r in items.to_dict("records")}


def test_the_experts_annotation_replaces_the_llms_and_its_items_follow(review_env):
    data, ls, _srv, _configure = review_env
    store = TableStore(data)
    (a1, r1), (a2, r2) = llm_annotation(data, "owl"), llm_annotation(data, "cat")
    _write(store, "hummus_annotations", [a1, a2])
    _write(store, "hummus_regions", [r1, r2])
    _items(data)
    assert answers(data)[("hma_owl", "naming")] == "TIME IS MONEY"

    h.materialize(data, "hummus", ["hummus_annotation_tasks"])
    tasks = h.tasks(ls, "annotation · hummus")
    task = tasks["hma_owl"]
    for t in tasks.values():  # hidden: neither a gold nor the LLM's draft (its metaphor, box, words)
        full = ls.request("GET", f"/api/tasks/{t['id']}")
        assert set(full["data"]) == {"image", "caption", "unit_id"} and not full["predictions"]
        shown = json.dumps(full)
        assert "TIME IS MONEY" not in shown and "LLM draft explanation" not in shown and "<i>" not in shown
    assert not task["annotations"]

    # the expert's own annotation: the verdict, a metaphor, a box, a span, an explanation
    result = [
        h.choice("verdict", "Yes", "image"),
        {
            "from_name": "explanation",
            "to_name": "caption",
            "type": "textarea",
            "value": {"text": ["A clock with wings."]},
        },
        {"from_name": "metaphors", "to_name": "caption", "type": "textarea", "value": {"text": ["TIME IS A BIRD"]}},
        {"from_name": "region_labels", "to_name": "caption", "type": "textarea", "value": {"text": ["winged clock"]}},
        {
            "id": "b1",
            "from_name": "boxes",
            "to_name": "image",
            "type": "rectanglelabels",
            "original_width": 200,
            "original_height": 100,
            "value": {
                "x": 50.0,
                "y": 20.0,
                "width": 25.0,
                "height": 50.0,
                "rotation": 0,
                "rectanglelabels": ["region"],
            },
        },
        {
            "id": "s1",
            "from_name": "spans",
            "to_name": "caption",
            "type": "labels",
            "value": {"start": 0, "end": 10, "text": "Time flies", "labels": ["metaphor"]},
        },
    ]
    sr.submit(ls, task, sr.reviewer(ls, "linguist@example.org"), result)
    h.materialize(data, "hummus", ["hummus_annotation_results"])
    res = h.results(data, "hummus__annotation")
    assert res["hma_owl"]["decided_by"] == "human" and res["hma_owl"]["changed"]
    assert res["hma_cat"]["decided_by"] == "llm" and res["hma_cat"]["why_llm"] == "not_answered"

    _items(data)
    got = answers(data)
    assert got[("hma_owl", "naming")] == "TIME IS A BIRD"
    assert got[("hma_owl", "image_label")] == "winged clock"
    assert got[("hma_owl", "image_box")] == "winged clock: [0.200, 0.500, 0.500, 0.250]"
    assert got[("hma_owl", "caption_highlight")] == "<i>Time flies</i> when you are having fun."
    assert got[("hma_cat", "naming")] == "TIME IS MONEY"  # the LLM's where no person annotated
    assert got[("hma_cat", "image_box")] == "clock: [0.100, 0.100, 0.400, 0.200]"
