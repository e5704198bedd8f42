"""The ViMU taxonomy data: labels of App. E / F, the derived macro mapping, label validation."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assets.recipes.vimu.logic.taxonomy import LETTERS, TAXONOMY_PATH, load_taxonomy, parse_taxonomy
from forge.storage.contracts import load_contract

ROOT = Path(__file__).resolve().parents[3]
RHETORIC_APP_E = [
    "Literal Only",
    "Sarcasm",
    "Irony",
    "Mockery",
    "Stereotype Invocation",
    "Exaggeration",
    "Contrast",
    "Innuendo",
    "Absurdism",
    "Role Reversal",
    "Dog Whistle or Code",
    "Bait and Switch",
    "Deadpan",
    "Parody",
    "Other",
]
SOCIAL_APP_F = [
    "None",
    "Negative Affect",
    "Contempt",
    "Exclusion",
    "Discrimination or Prejudice",
    "Norm Violation",
    "Anti-Mainstream Value",
    "Fatalism or Cynicism",
    "Sexual Implication",
    "Political or Identity Signal",
    "Aggression or Hostility",
    "Humiliation",
    "Other",
]


@pytest.fixture(scope="module")
def tax():
    return load_taxonomy()


def test_labels_are_the_papers(tax):
    assert tax.axis("rhetoric").label_names == RHETORIC_APP_E
    assert tax.axis("social_value").label_names == SOCIAL_APP_F
    assert tax.axis("evidence").label_names == [
        "Visual frames",
        "On-screen text",
        "Editing pattern",
        "Audio content",
        "Vocal tone",
    ]
    assert all(lab.definition for ax in ("rhetoric", "social_value") for lab in tax.axis(ax).labels)


def test_macro_names_stated_in_the_paper(tax):
    rm, sv = tax.axis("rhetoric"), tax.axis("social_value")
    assert rm.macro("A").name == "Literal / Direct"
    assert rm.macro("B").name == "Opposition / Incongruity"
    assert rm.macro("D").name == "Amplification / Stylization"
    assert rm.macro("E").name == "Implicit / Coded Social Framing"
    assert sv.macro("B").name == "Emotional Attitude"
    assert sv.macro("E").name == "Identity / Ideological Signaling"
    # official names of the options the text of the paper leaves unnamed
    assert rm.macro("C").name == "Attitude / Tone-based Rhetoric"
    assert sv.macro("A").name == "Neutral / No Social Signal"
    assert sv.macro("C").name == "Social Evaluation / Devaluation"
    assert sv.macro("D").name == "Norm and Value Framing"


# The official grouping (scripts/20-vimu_ss.py, guided prompt of the ViMU repository).
@pytest.mark.parametrize(
    "axis,label,macro",
    [
        ("rhetoric", "Literal Only", "A"),
        ("rhetoric", "Contrast", "B"),
        ("rhetoric", "Bait and Switch", "B"),
        ("rhetoric", "Role Reversal", "B"),
        ("rhetoric", "Absurdism", "B"),
        ("rhetoric", "Sarcasm", "C"),
        ("rhetoric", "Irony", "C"),
        ("rhetoric", "Deadpan", "C"),
        ("rhetoric", "Mockery", "C"),
        ("rhetoric", "Exaggeration", "D"),
        ("rhetoric", "Parody", "D"),
        ("rhetoric", "Innuendo", "E"),
        ("rhetoric", "Dog Whistle or Code", "E"),
        ("rhetoric", "Stereotype Invocation", "E"),
        ("social_value", "None", "A"),
        ("social_value", "Negative Affect", "B"),
        ("social_value", "Fatalism or Cynicism", "B"),
        ("social_value", "Contempt", "C"),
        ("social_value", "Aggression or Hostility", "C"),
        ("social_value", "Humiliation", "C"),
        ("social_value", "Exclusion", "C"),
        ("social_value", "Discrimination or Prejudice", "C"),
        ("social_value", "Norm Violation", "D"),
        ("social_value", "Anti-Mainstream Value", "D"),
        ("social_value", "Political or Identity Signal", "E"),
        ("social_value", "Sexual Implication", "E"),
        ("social_value", "Other", "E"),
    ],
)
def test_fine_to_macro_mapping(tax, axis, label, macro):
    assert tax.macro_letters(axis, [label]) == [macro]


def test_every_macro_is_populated_and_other_has_none(tax):
    for axis in ("rhetoric", "social_value", "evidence"):
        used = {lab.macro for lab in tax.axis(axis).labels if lab.macro}
        assert used == set(LETTERS), axis
    assert tax.macro_letters("rhetoric", ["Other"]) == []


def test_macro_sets_union_and_sort(tax):
    assert tax.macro_letters("rhetoric", ["Parody", "Irony", "Sarcasm", "Innuendo"]) == ["C", "D", "E"]
    assert tax.macro_names("rhetoric", ["A", "E"]) == ["Literal / Direct", "Implicit / Coded Social Framing"]


def test_check_labels_normalises_reports_unknown_and_drops_exclusive(tax):
    chk = tax.check_labels("rhetoric", ["bait-and-switch", "SARCASM", "sarcasm", "dog_whistle_or_code"])
    assert chk.labels == ["Sarcasm", "Dog Whistle or Code", "Bait and Switch"] and chk.ok
    bad = tax.check_labels("rhetoric", ["Sarcasm", "Pun"])
    assert bad.unknown == ["Pun"] and not bad.ok
    excl = tax.check_labels("social_value", ["None", "Contempt"])
    assert excl.labels == ["Contempt"] and excl.dropped_exclusive == ["None"]
    alone = tax.check_labels("rhetoric", ["Literal Only"])
    assert alone.labels == ["Literal Only"] and not alone.dropped_exclusive
    assert not tax.check_labels("rhetoric", []).ok


def test_parse_rejects_bad_mapping():
    doc = yaml.safe_load(TAXONOMY_PATH.read_text())
    doc["axes"]["rhetoric"]["labels"][1]["macro"] = "F"
    with pytest.raises(ValueError, match="not in"):
        parse_taxonomy(doc)


def test_prompt_schema_and_contract_agree_with_taxonomy(tax):
    schema = yaml.safe_load((ROOT / "assets/recipes/vimu/prompts/annotate.yaml").read_text())["schema"]["properties"]
    assert set(schema["rhetoric_mechanisms"]["items"]["enum"]) == set(tax.axis("rhetoric").label_names)
    assert set(schema["social_value_signals"]["items"]["enum"]) == set(tax.axis("social_value").label_names)
    assert set(schema["evidence"]["items"]["properties"]["source"]["enum"]) == set(tax.axis("evidence").label_names)
    assert set(schema["target_subjects"]["items"]["properties"]["kind"]["enum"]) == set(tax.target_kinds)
    cols = {c.name: c for c in load_contract("vimu_annotations").columns}
    assert set(cols["rhetoric_mechanisms"].values) == set(tax.axis("rhetoric").label_names)
    assert set(cols["social_value_signals"].values) == set(tax.axis("social_value").label_names)


def test_guidance_lists_five_definitions(tax):
    text = tax.guidance("social_value")
    assert [line[:2] for line in text.splitlines()] == ["A.", "B.", "C.", "D.", "E."]
    assert "Identity / Ideological Signaling" in text
