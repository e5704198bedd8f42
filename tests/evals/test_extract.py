import pytest

from forge.evals.extract import (
    extract_box,
    extract_choice,
    extract_highlight,
    extract_naming,
    extract_text,
    extract_word,
)

OPTS = ["a cat", "a dog", "a bird", "a fish", "a cow", "a pig"]


@pytest.mark.parametrize(
    "reply,letters,method",
    [
        ("(C)", ("C",), "letters_only"),
        ("C)", ("C",), "letters_only"),
        ("Answer: C", ("C",), "letters_only"),
        ("c", ("C",), "letters_only"),
        ("answer: (c)", ("C",), "letters_only"),
        ("The answer is C.", ("C",), "letters_only"),
        ("Let's think: (A) is too literal, (B) misses the irony.\nAnswer: (D)", ("D",), "letters_only"),
        ("Answer: C is the best fit because ...", ("C",), "marker_letter"),
        ("I would pick (E) here.", ("E",), "delimited"),
        ("It shows a dog, clearly.", ("B",), "option_text"),
        ("Final answer: **B**", ("B",), "letters_only"),
    ],
)
def test_single_choice(reply, letters, method):
    e = extract_choice(reply, OPTS)
    assert e.ok and e.letters == letters and e.method == method


@pytest.mark.parametrize(
    "reply,reason",
    [
        ("", "empty"),
        (None, "empty"),
        ("A man walks into a bar", "no_answer"),
        ("(G)", "out_of_range"),
        ("B, D", "ambiguous"),
        ("Either (A) or (B)", "ambiguous"),
        ("a cat or a dog", "ambiguous"),
    ],
)
def test_single_choice_failures_are_not_guessed(reply, reason):
    e = extract_choice(reply, OPTS)
    assert not e.ok and e.reason == reason and e.letters == ()


@pytest.mark.parametrize(
    "reply,letters",
    [
        ("A,C", ("A", "C")),
        ("A, C", ("A", "C")),
        ("a and c", ("A", "C")),
        ("(B)(D)", ("B", "D")),
        ("Answer: C, A", ("A", "C")),
        ("E", ("E",)),
    ],
)
def test_multi_select(reply, letters):
    e = extract_choice(reply, OPTS[:5], multi=True)
    assert e.ok and e.letters == letters


def test_option_text_prefers_longer_option():
    opts = ["Literal", "Literal / Direct", "Contrast"]
    assert extract_choice("Literal / Direct", opts).letters == ("B",)
    assert extract_choice("No.", ["Yes", "No"]).letters == ("B",)
    assert extract_choice("Nothing to add", ["Yes", "No"]).reason == "no_answer"  # whole words only


def test_open_ended_kinds():
    assert extract_text("  ").reason == "empty"
    assert extract_text("Explain?", question="Caption: x\n\nExplain?").reason == "echoes_prompt"
    assert extract_text("It mocks the boss.").text == "It mocks the boss."
    n = extract_naming("The metaphor is:\nLOVE IS A JOURNEY")
    assert n.ok and n.values == {"target": "LOVE", "source": "A JOURNEY"}
    assert not extract_naming("a journey").ok
    b = extract_box("shark: [0.1, 0.2, 0.3, 0.4]")
    assert b.ok and b.values == {"label": "shark", "box": [0.1, 0.2, 0.3, 0.4]}
    assert extract_box("shark: [0.1, 0.2, 1.3, 0.4]").reason == "box_out_of_range"
    assert extract_box("a shark near the top").reason == "no_box"
    assert extract_word("Shark.").text == "shark"
    h = extract_highlight("my <i>boss</i> is a <i>shark</i>")
    assert h.values["spans"] == ["boss", "shark"]
    assert extract_highlight("my boss is a shark").reason == "no_highlight"
