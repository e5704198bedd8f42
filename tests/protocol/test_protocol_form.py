"""The protocol form without a server: what a person's annotation is read as, what is refused and
why, how several people combine, the seeded sample, and the assets when Label Studio is down."""

from __future__ import annotations

import dagster as dg
import pandas as pd
import pytest

from assets.people.factory import people_defs
from forge.benchmarks.protocol_spec import StepSample
from forge.benchmarks.registry import get
from forge.protocol import form, steps
from forge.storage import TableStore
from resources.review import ReviewResource
from resources.storage import StorageResource
from tests.protocol import helpers as h

VAGUE_DIRECT, VAGUE_INDIRECT = get("vague").human_steps
INSPECTION = get("iibench").human_steps[0]


def test_a_rating_outside_the_scale_or_an_empty_answer_is_refused():
    ok = form.read(VAGUE_DIRECT, [h.rating("relevance", 4, "direct"), h.rating("solvability", 5, "direct")])
    assert ok == {"relevance": 4, "solvability": 5}
    cases = {
        "rating_out_of_range": [h.rating("relevance", 6, "direct"), h.rating("solvability", 5, "direct")],
        "empty_answer": [h.rating("relevance", 4, "direct")],
        "unknown_control": [h.rating("relevance", 4, "direct"), h.rating("mood", 3, "direct")],
    }
    for code, result in cases.items():
        with pytest.raises(form.Refused) as exc:
            form.read(VAGUE_DIRECT, result)
        assert exc.value.code == code
    with pytest.raises(form.Refused, match="unknown_choice"):
        form.read(INSPECTION, [h.choice("inspection", "maybe")])
    with pytest.raises(form.Refused, match="empty_answer"):
        form.read(INSPECTION, [])


def test_the_prediction_is_read_back_as_the_llms_values():
    llm = {"selected": "meme_idiom", "rating": 4}
    pred = form.prediction(VAGUE_INDIRECT, llm, "gpt-test")
    assert pred["model_version"] == "gpt-test" and form.read(VAGUE_INDIRECT, pred["result"]) == llm
    assert '<Rating name="rating" toName="candidates" maxRating="5"' in form.label_config(VAGUE_INDIRECT)


def _answers(*values: dict) -> list[dict]:
    return [
        {"values": __import__("json").dumps(v), "created_at": pd.Timestamp(2026, 1, 1 + i)}
        for i, v in enumerate(values)
    ]


def test_people_combine_by_kind_and_the_papers_thresholds_decide():
    llm = {"selected": "humour", "rating": 4}
    two = steps.combine(
        VAGUE_INDIRECT, _answers({"selected": "sarcasm", "rating": 2}, {"selected": "humour", "rating": 3}), llm
    )
    assert two == {"selected": "humour", "rating": 2.5}  # a tie goes to the LLM's choice; the mean rating
    assert not steps.keeps(VAGUE_INDIRECT, two) and steps.keeps(VAGUE_INDIRECT, {"selected": "humour", "rating": 3})
    assert not steps.keeps(VAGUE_DIRECT, {"relevance": 5, "solvability": 3.5})


def test_a_sample_is_seeded_and_stable():
    units = [f"u{i}" for i in range(200)]
    half = steps.sampled(units, StepSample(share=0.5, seed="s"))
    assert 70 < len(half) < 130 and half == steps.sampled(units, StepSample(share=0.5, seed="s"))
    assert half <= steps.sampled(units + ["new"], StepSample(share=0.5, seed="s"))  # membership never changes
    assert len(steps.sampled(units, StepSample(count=40, seed="s"))) == 40
    with pytest.raises(ValueError):
        StepSample(share=0.5, count=3)


def test_label_studio_down(tmp_path, monkeypatch):
    store = TableStore(tmp_path)
    implication = pd.DataFrame(
        [{"frame_id": "f1", "keep": True, "path": "media/x.png", "implication": "i", "reason": "r"}]
    )
    store.write("iibench_implication", implication, "b1")
    resources = {
        "storage": StorageResource(data_dir=str(tmp_path)),
        "review": ReviewResource(url="http://127.0.0.1:9", token="t"),
    }
    assets = list(people_defs("iibench", "step").assets)
    monkeypatch.setenv("SUBTEXT_REVIEW_POLICY", "advisory")
    res = dg.materialize(
        assets, selection=["iibench_inspection_tasks", "iibench_inspection_results"], resources=resources
    )
    md = res.asset_materializations_for_node("iibench_inspection_tasks")[0].metadata
    assert res.success and "make review" in md["note"].value
    # nothing read: the LLM decides every unit, and the row says so (a build with no tool)
    (row,) = store.read("protocol_results", parts=["iibench__inspection"]).to_dict("records")
    assert (row["unit_id"], row["decided_by"], row["why_llm"], row["keep"]) == ("f1", "llm", "no_label_studio", True)
    monkeypatch.setenv("SUBTEXT_REVIEW_POLICY", "required")
    assets = list(people_defs("iibench", "step").assets)  # a later run loads the definitions, settings and all, anew
    res = dg.materialize(assets, selection=["iibench_inspection_tasks"], resources=resources, raise_on_error=False)
    assert not res.success
    # the results still record who decided, under every policy; a later read without the tool keeps them
    store.write("iibench_implication", pd.concat([implication, implication.assign(frame_id="f2", keep=False)]), "b1")
    assert dg.materialize(assets, selection=["iibench_inspection_results"], resources=resources).success
    res = store.read("protocol_results", parts=["iibench__inspection"]).set_index("unit_id")
    assert res["decided_by"].to_dict() == {"f1": "llm", "f2": "llm"} and res["keep"].to_dict() == {
        "f1": True,
        "f2": False,
    }


def test_the_settings_say_the_sample_people_and_thresholds(recipe_overrides):
    assert steps.configured(get("vague"), VAGUE_DIRECT) is VAGUE_DIRECT  # the paper's: every unit, one rater
    cfg = {"share": 0.25, "seed": "round-2", "annotators": 3, "thresholds": {"relevance": 3}}
    recipe_overrides("vague", {"protocol": {"direct_rating": cfg}})
    step = steps.configured(get("vague"), VAGUE_DIRECT)
    assert step.sample == StepSample(share=0.25, seed="round-2") and step.annotators == 3
    assert step.thresholds == {"relevance": 3, "solvability": 4}
    assert steps.step_of(get("vague"), "direct_rating") == step
    recipe_overrides("vague", {"protocol": {"direct_rating": {"raters": 3}}})
    with pytest.raises(ValueError, match="unknown settings"):
        steps.configured(get("vague"), VAGUE_DIRECT)


def test_a_draft_says_who_wrote_it_and_a_discard_is_never_a_blank_suggestion():
    """The stub backend's rows carry the configured model's name: their prediction says ``stub``.
    A pair the LLM marked Discard is suggested with its verdict and the reason (issue #53)."""
    from assets.recipes.hummus.logic.protocol import STEP as HUMMUS

    assert steps.written_by({"backend": "stub", "model": "gpt-4o-mini"}) == "stub"
    assert steps.written_by({"backend": "openai", "model": "gpt-4o-mini"}) == "gpt-4o-mini"
    row = {"verdict": "Discard", "discard_reason": "the pun needs the French original", "regions": [], "caption": "c"}
    pred = form.prediction(HUMMUS, get("hummus").hooks.step_llm_values(HUMMUS.name, row), "stub")["result"]
    assert {r["from_name"]: r["value"] for r in pred} == {
        "verdict": {"choices": ["Discard"]},
        "explanation": {"text": ["Discard: the pun needs the French original"]},
    }
