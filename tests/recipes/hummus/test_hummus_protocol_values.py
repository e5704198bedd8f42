"""A person's Hummus annotation is wholly theirs (assets/recipes/hummus/logic/protocol.py): the
humor understanding (incongruities, resolution) and devices come from the expert's form, never
from the LLM's draft the hidden form did not show; the form pre-fills them only under
``suggestion``."""

from __future__ import annotations

from assets.recipes.hummus.hooks import HummusHooks
from assets.recipes.hummus.logic import protocol as P
from forge.protocol import form
from tests.recipes.hummus.test_hummus_protocol import llm_annotation


def _row(tmp_path) -> dict:
    ann, region = llm_annotation(tmp_path, "owl")
    ann["devices"] = ["pun"]
    return {**ann, "regions": [region]}


def test_the_experts_own_understanding_replaces_the_llms(tmp_path):
    row = _row(tmp_path)
    values = {
        "verdict": "Yes",
        "incongruities": "a clock with feathers\na clock on a perch",
        "resolution": "time is said to fly",
        "metaphors": "TIME IS A BIRD",
        "devices": ["idiom"],
    }
    out, _ = P.human_annotation(row, values)
    assert out["incongruities"] == ["a clock with feathers", "a clock on a perch"]
    assert (out["resolution"], out["devices"], out["metaphors"]) == (
        "time is said to fly",
        ["idiom"],
        ["TIME IS A BIRD"],
    )


def test_left_empty_they_stay_empty_not_the_llms(tmp_path):
    out, _ = P.human_annotation(_row(tmp_path), {"verdict": "Yes", "metaphors": "TIME IS A BIRD"})
    assert out["incongruities"] == [] and out["resolution"] is None and out["devices"] == []


def test_the_suggestion_prefills_the_llms_understanding(tmp_path):
    pred = {
        r["from_name"]: r["value"]
        for r in form.prediction(P.STEP, HummusHooks().step_llm_values(P.STEP.name, _row(tmp_path)), "m")["result"]
    }
    assert pred["incongruities"] == {"text": ["a clock with wings"]} and pred["devices"] == {"choices": ["pun"]}
    assert 'name="devices"' in form.label_config(P.STEP) and 'name="resolution"' in form.label_config(P.STEP)
