"""Hummus pure logic: metaphor format, boxes, caption spans, explanation length, items."""

import json

from assets.recipes.hummus.logic import annotations as A
from assets.recipes.hummus.logic import items


def test_metaphor_format():
    assert A.metaphor_problem("LOVE IS A JOURNEY") is None
    assert A.metaphor_problem("humans are animals") is None  # case is repaired, not rejected
    assert A.metaphor_problem("ANIMALS/HUMANS ARE HUMANS/ANIMALS") is None
    assert "exactly one" in A.metaphor_problem("love, journey")
    assert "exactly one" in A.metaphor_problem("LIFE IS WHAT IS LEFT")
    assert "same domain" in A.metaphor_problem("A CAT IS THE CAT")
    assert "more than" in A.metaphor_problem("THE MAN IN THE HAZMAT SUIT AT THE PUB IS A CANARY")
    assert A.split_metaphor("pub is a coal mine") == ("PUB", "A COAL MINE")


def test_region_pixels_and_bounds():
    r, why = A.region_from_norm("car", [0.25, 0.0, 0.5, 0.4], width=800, height=600)
    assert why is None
    assert (r.x0, r.y0, r.x1, r.y1) == (0, 150, 320, 450)
    assert r.as_answer() == "car: [0.250, 0.000, 0.500, 0.400]"
    assert A.region_from_norm("car", [0.7, 0.1, 0.5, 0.2], 800, 600)[1].startswith("region 'car': box")
    assert A.region_from_norm("car", [120, 40, 200, 100], 800, 600)[1] is not None  # pixels, not fractions
    assert A.region_from_norm("", [0.1, 0.1, 0.2, 0.2], 800, 600)[1].startswith("a region has no label")


def test_caption_highlight_exact_and_reanchored():
    cap = "Our sex life is a train wreck."
    hl, why, rep = A.parse_highlight(cap, "Our sex life is a <i>train wreck</i>.")
    assert why is None and not rep and hl.spans == ["train wreck"] and cap[slice(*hl.offsets[0])] == "train wreck"
    hl, why, rep = A.parse_highlight(cap, "our sex life is a <i>train wreck</i>")  # model changed the case
    assert rep and hl.highlighted == "Our sex life is a <i>train wreck</i>."
    assert "not an exact substring" in A.parse_highlight(cap, "a <i>car crash</i>")[1]
    assert "no <i></i>" in A.parse_highlight(cap, cap)[1]
    assert "unbalanced" in A.parse_highlight(cap, "<i>Our <i>sex</i> life</i>")[1]


def _reply(**kw):
    base = {
        "verdict": "Yes",
        "incongruities": ["a car in the bedroom"],
        "resolution": "the caption compares sex life to a wreck",
        "metaphors": ["love is a journey"],
        "regions": [{"label": "car", "box": [0.3, 0.0, 0.5, 0.4]}],
        "caption_highlighted": "Our sex life is a <i>train wreck</i>.",
        "explanation": "The car crash literalises the train wreck of their love life.",
        "devices": ["Hyperbole"],
        "discard_reason": "",
    }
    base.update(kw)
    return base


def test_validate_annotation_branches():
    cap = "Our sex life is a train wreck."
    ann, p = A.validate_annotation(_reply(), cap, 800, 600)
    assert not p and ann.metaphors == ["LOVE IS A JOURNEY"] and ann.devices == ["hyperbole"]
    _, p = A.validate_annotation(_reply(explanation=" ".join(["word"] * 31)), cap, 800, 600, max_words=30)
    assert p.primary() == A.EXPLANATION_TOO_LONG and "31 words" in p.feedback()
    _, p = A.validate_annotation(_reply(regions=[{"label": "car", "box": [0.9, 0.0, 0.5, 0.4]}]), cap, 800, 600)
    assert p.primary() == A.BOX_OUT_OF_BOUNDS
    _, p = A.validate_annotation(_reply(metaphors=["the car"]), cap, 800, 600)
    assert p.primary() == A.BAD_METAPHOR
    _, p = A.validate_annotation(_reply(caption_highlighted="<i>crash</i>"), cap, 800, 600)
    assert p.primary() == A.INVALID_SPAN
    no, p = A.validate_annotation(_reply(verdict="no", metaphors=[], regions=[], caption_highlighted=""), cap, 800, 600)
    assert not p and no.verdict == "No"
    _, p = A.validate_annotation(_reply(verdict="Discard"), cap, 800, 600)
    assert p.primary() == A.MISSING_FIELD
    _, p = A.validate_annotation(_reply(verdict="maybe"), cap, 800, 600)
    assert p.primary() == A.BAD_VERDICT


def _ann_row(verdict):
    return {
        "annotation_id": "a1",
        "frame_id": "img_1",
        "item_id": "it",
        "source": "capcon",
        "batch": "capcon-0000",
        "path": "media/images/x.png",
        "caption": "Our sex life is a train wreck.",
        "caption_origin": "source",
        "verdict": verdict,
        "metaphors": ["LOVE IS A JOURNEY"],
        "devices": [],
        "width": 800,
        "height": 600,
        "caption_highlighted": "Our sex life is a <i>train wreck</i>.",
        "explanation": "Short.",
        "backend": "openai",
        "model": "m",
        "prompt_hash": "h",
    }


def test_items_six_tasks_for_positive_one_for_negative():
    region = {
        "region_index": 0,
        "label": "car",
        "box_norm_top": 0.3,
        "box_norm_left": 0.0,
        "box_norm_height": 0.5,
        "box_norm_width": 0.4,
        "box_px_x0": 0,
        "box_px_y0": 180,
        "box_px_x1": 320,
        "box_px_y1": 480,
    }
    pos = items.build_items(_ann_row("WIDLII"), [region])
    assert [r["task"] for r in pos] == list(items.TASKS)
    by = {r["task"]: r for r in pos}
    assert by["classification"]["answer"] == "A" and by["classification"]["options"] == ["Yes", "No"]
    assert by["image_box"]["answer"] == "car: [0.300, 0.000, 0.500, 0.400]"
    assert by["naming"]["question"].startswith("Caption: Our sex life is a train wreck.\n\nThe humor")
    assert json.loads(by["naming"]["labels"])["boxes"][0]["box_px_xyxy"] == [0, 180, 320, 480]
    neg = items.build_items(_ann_row("No"), [])
    assert [(r["task"], r["answer"]) for r in neg] == [("classification", "B")]
    assert items.build_items(_ann_row("Discard"), []) == []
    assert len({r["item_id"] for r in pos}) == 6


def test_prompt_schemas_agree_with_label_data():
    from pathlib import Path

    from assets.recipes.hummus.logic.taxonomy import devices, verdicts
    from assets.recipes.iibench.logic import taxonomy as T
    from forge.llm.prompts import load_prompt

    root = Path(__file__).resolve().parents[3] / "assets/recipes"
    ann = load_prompt(root / "hummus/prompts/annotate.yaml").schema["properties"]
    assert ann["devices"]["items"]["enum"] == devices() and ann["verdict"]["enum"] == verdicts()
    lab = load_prompt(root / "iibench/prompts/labels.yaml").schema["properties"]
    for axis in T.SINGLE_AXES:
        assert lab[axis]["enum"] == T.values(axis)
    assert lab["rhetoric"]["items"]["enum"] == T.values("rhetoric")
