"""Stage 5 task construction: OE + three multi-select items, gold letters, App. G variants, scoring."""

from __future__ import annotations

import json

import pytest

from assets.recipes.vimu.logic.items import answer_letters, build_items, multi_select_score, parse_letters
from assets.recipes.vimu.logic.taxonomy import load_taxonomy

TAX = load_taxonomy()


def annotation(rhetoric=("Sarcasm", "Parody"), social=("Contempt",), evidence=("Visual frames", "Vocal tone")):
    return {
        "clip_id": "c1",
        "batch": "b1",
        "source": "s",
        "item_id": "v1",
        "channel": "ch",
        "media_paths": ["media/f0.jpg", "media/f1.jpg"],
        "transcript": "hello there",
        "intended_meaning": "It ridicules the boss.",
        "rhetoric_mechanisms": list(rhetoric),
        "social_value_signals": list(social),
        "evidence_sources": list(evidence),
        "rhetoric_macros": TAX.macro_letters("rhetoric", list(rhetoric)),
        "social_value_macros": TAX.macro_letters("social_value", list(social)),
        "evidence_macros": TAX.macro_letters("evidence", list(evidence)),
        "target_kinds": ["person_in_video"],
        "backend": "openai",
    }


QUESTION = {
    "question_id": "vq1",
    "question": "What is the creator's point?",
    "answer": "The boss is a fool.",
    "reference_points": ["boss", "fool"],
    "backend": "openai",
    "model": "m",
}


def test_four_items_with_gold_sets():
    items, skipped = build_items(TAX, annotation(), QUESTION, prompt_hash="h")
    assert skipped == []
    by = {i["category"]: i for i in items}
    assert set(by) == {"OE", "EG", "RM", "SV"}
    assert by["RM"]["answer"] == "C,D" and by["SV"]["answer"] == "C" and by["EG"]["answer"] == "A,E"
    assert by["RM"]["options"][0] == "Literal / Direct" and len(by["RM"]["options"]) == 5
    assert by["RM"]["option_types"] == ["distractor", "distractor", "correct", "correct", "distractor"]
    oe = by["OE"]
    assert oe["task"] == "open_ended" and oe["options"] is None and oe["references"] == ["The boss is a fool."]
    assert json.loads(oe["extra"])["reference_points"] == ["boss", "fool"]
    labels = json.loads(by["SV"]["labels"])
    assert labels["rhetoric_macros"] == ["C", "D"] and labels["social_value_signals"] == ["Contempt"]
    assert all(i["prompt_hash"] == "h" and i["source_item_id"] == "v1" and i["unit_id"] == "c1" for i in items)
    assert len({i["item_id"] for i in items}) == 4


def test_guided_variant_adds_definitions_only_for_rm_sv():
    items, _ = build_items(TAX, annotation(), QUESTION, prompt_hash="h")
    by = {i["category"]: json.loads(i["extra"])["prompts"] for i in items}
    for task in ("RM", "SV"):
        assert "Definitions of the options" in by[task]["guided"]
        assert "Definitions of the options" not in by[task]["unguided"]
        assert "A. " in by[task]["unguided"] and "hello there" in by[task]["unguided"]
    assert by["EG"]["guided"] is None and by["OE"]["guided"] is None
    assert "What is the creator's point?" in by["OE"]["unguided"]


def test_other_only_rhetoric_skips_rm():
    items, skipped = build_items(TAX, annotation(rhetoric=("Other",)), QUESTION, prompt_hash="h")
    assert {i["category"] for i in items} == {"OE", "EG", "SV"}
    assert [s[1] for s in skipped] == ["rm_no_macro"]


def test_stub_anywhere_marks_items_stub():
    a = dict(annotation(), backend="stub")
    items, _ = build_items(TAX, a, QUESTION, prompt_hash="h")
    assert {i["backend"] for i in items} == {"stub"}


def test_letters_and_set_scoring():
    assert answer_letters(["C", "A", "C"]) == "A,C"
    with pytest.raises(ValueError):
        answer_letters([])
    assert parse_letters(" c, a ") == ["A", "C"]
    assert multi_select_score(["A", "C"], ["A", "C"]) == 1.0
    assert multi_select_score(["A"], ["A", "C"]) == 0.5
    assert multi_select_score(["A", "B"], ["A", "C"]) == 0.0
