"""Hummus on the offline stub backend (the demo): placeholder annotations fail the code checks
(metaphor format, boxes, span), which are recorded, not applied; Yes/WIDLII items still come out."""

import json

from forge.llm.stub import ADVISORY_NOTE
from resources.llm import LLMResource
from tests.recipes.hummus.test_hummus_assets import CAPTIONS, _run, store  # noqa: F401 - fixture


def test_hummus_stub_run_yields_items(store, tmp_path):
    res = _run(store, LLMResource(backend="stub", cache_path=str(tmp_path / "c.sqlite")), max_rounds=2)
    assert res.success
    ann = store.read("hummus_annotations")
    assert len(ann) == len(CAPTIONS) and (ann["backend"] == "stub").all()  # nothing rejected
    assert store.read("rejects", where="stage = 'hummus_annotations'").empty
    positive = ann[ann["verdict"].isin(["Yes", "WIDLII"])]
    assert len(positive) >= 1
    # the checks that failed on placeholder text are on record
    notes = [n for a in positive["advisory"].dropna() for n in json.loads(a)]
    assert any(n.startswith("bad_metaphor_format") for n in notes)
    items = store.read("hummus_items")
    assert (items["backend"] == "stub").all()
    derived = items[items["unit_id"].isin(positive["frame_id"])]
    assert {"classification", "naming", "explanation"} <= set(derived["task"])
    assert all(json.loads(e).get("advisory") for e in derived["extra"])
    att = store.read("llm_attempts")
    assert att[att["step"].str.startswith("check:")]["advisory"].all()
    md = res.asset_materializations_for_node("hummus_annotations")[0].metadata
    assert md["stub_verdicts"].value == ADVISORY_NOTE
