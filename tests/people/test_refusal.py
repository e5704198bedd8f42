"""Refusal and return, the one helper every kind of people's work uses (forge/people/refusal.py)."""

from __future__ import annotations

from forge.evals import judge_validation as jv
from forge.evals.human import refusal_of
from forge.people.refusal import back_to, control_problem, skipped
from forge.review.verdicts import SKIPPED, parse_annotation

FORM = {"choice": ("choices", "question"), "box": ("rectanglelabels", "image")}


def test_a_result_outside_the_form_is_refused_with_its_reason() -> None:
    assert control_problem([{"from_name": "choice", "type": "choices", "to_name": "question"}], FORM) is None
    assert control_problem([], FORM) is None
    odd = [{"from_name": "choice", "type": "textarea", "to_name": "question"}]
    assert control_problem(odd, FORM, "the blind form") == (
        "unknown_control: 'choice' (textarea) is not a control of the blind form"
    )
    elsewhere = [{"from_name": "box", "type": "rectanglelabels", "to_name": "video"}]
    assert control_problem(elsewhere, FORM) == "unknown_target: 'box' names 'video'; the form's box is about 'image'"
    assert control_problem(["not an entry"], FORM).startswith("unknown_control: None")


def test_every_kind_refuses_the_same_way() -> None:
    """Review, the blind baseline and judge validation give the one helper's reasons."""
    unknown = [{"from_name": "verdict2", "type": "choices", "to_name": "question", "value": {"choices": ["x"]}}]
    assert parse_annotation(unknown, {}, ("other",))["refused"] == control_problem(unknown, {}, "the review form")
    assert refusal_of({"result": unknown}) == "refused: " + control_problem(unknown, {}, "the blind form")
    assert jv.read_label(unknown, ["Correct"]) == (None, control_problem(unknown, {}))
    assert SKIPPED.startswith(skipped("verdict"))
    assert refusal_of({"was_cancelled": True, "result": []}) == f"refused: {skipped('answer')}"


def test_a_returned_answer_goes_back_to_its_author() -> None:
    assert back_to("r2@x", "r1@x", refused=False) == ("r1@x", "changed by someone else")
    assert back_to("r2@x", "r1@x", refused=True) == ("r2@x", "not taken")  # the change itself was refused
    assert back_to("r1@x", "r1@x", refused=True) == ("r1@x", "not taken")
    assert back_to("r1@x", None, refused=True) == ("r1@x", "not taken")
