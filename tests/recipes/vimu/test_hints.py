"""The code-side hint-free check: word boundaries, case, inflections, multi-word terms."""

from __future__ import annotations

import pytest

from assets.recipes.vimu.logic.hints import find_hint_leaks, leak_feedback
from assets.recipes.vimu.logic.taxonomy import load_taxonomy

TERMS = load_taxonomy().hint_terms()


@pytest.mark.parametrize(
    "question,term",
    [
        ("Why is the man being SARCASTIC here?", "sarcastic"),
        ("What is ironic about the ending?", "ironic"),
        ("Who is the video mocking?", "mock"),
        ("Which exaggerations make the point?", "exaggeration"),
        ("Where is the bait-and-switch?", "bait and switch"),
        ("Where is the bait and switch?", "bait and switch"),
        ("What does the rhetorical device accomplish?", "rhetorical"),
        ("How does the social value come across?", "social value"),
        ("What do the stereotypes suggest?", "stereotype"),
        ("What is parodied here?", "parody"),
        ("Why is the vocal tone flat?", "vocal tone"),
        ("What does the on-screen text imply?", "on-screen text"),
    ],
)
def test_leaks_found(question, term):
    leaks = find_hint_leaks(question, TERMS)
    assert term in [x.term for x in leaks]


@pytest.mark.parametrize(
    "question",
    [
        "What is this video really trying to say?",
        "Why does the clip end the way it does, and what is the creator's point?",
        "What would a regular viewer take away from the mockingbird scene?",  # 'mock' inside a word
        "What is the creator's point about office life?",
    ],
)
def test_clean_questions_pass(question):
    assert find_hint_leaks(question, TERMS) == []


def test_feedback_names_the_leaks_as_major():
    leaks = find_hint_leaks("Why is this ironic and sarcastic?", TERMS)
    fb = leak_feedback(leaks)
    assert fb.startswith("Major revision") and '"ironic"' in fb and '"sarcastic"' in fb


def test_none_and_other_are_not_terms():
    lowered = {t.lower() for t in TERMS}
    assert "none" not in lowered and "other" not in lowered
