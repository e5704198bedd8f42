"""The rules for people's typed text (``forge/checks/text_rules.py``) without a server, and every
reader that applies them: the review item and unit forms, protocol answers and blind answers."""

from __future__ import annotations

import unicodedata

import pytest

from forge.benchmarks.protocol_spec import Display, FieldKind, HumanStep, StepField
from forge.checks.text_rules import TextRefused, clean
from forge.evals.human import pick, refusal_of, reply_of
from forge.protocol import form
from forge.review.verdicts import SKIPPED, parse_annotation, verdict_rows
from tests.review import scripted as sr

REASONS = ("ambiguous", "other")


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("   \n\t ", "empty_field"),
        ("\u200b\u200c\u200d\u2060\ufeff", "invisible_only"),  # zero-width characters, word joiner, BOM
        ("\u00ad\u180e\u034f", "invisible_only"),  # soft hyphen, Mongolian vowel separator, grapheme joiner
        ("\u3164\u2800\u3000", "invisible_only"),  # HANGUL FILLER, BRAILLE PATTERN BLANK, ideographic space
        ("\u0301\u0301", "invisible_only"),  # combining marks without a base
        ("\U000e0041\U000e0042", "invisible_only"),  # tag characters (Cf)
        ("Why?\x00", "control_character"),
        ("\x1b[31mred\x1b[0m", "control_character"),
        ("a\x7fb", "control_character"),
        ("a\x85b", "control_character"),  # a C1 control
        ("What \u202egnihtemos\u202c?", "bidi_control"),
        ("a \u2066b\u2069", "bidi_control"),  # an isolate
        ("a \u202ab\u202c", "bidi_control"),  # an embedding
        ("half \ud800", "not_text"),
        ("<script>alert(1)</script>", "markup"),
        ("see <img src=x onerror=alert(1)>", "markup"),
        ("a </b> tag", "markup"),
        ("<!-- hidden -->", "markup"),
        ("&lt;script&gt;", "markup"),
        ("&#60;b&#62;", "markup"),
        ("&amp;lt;", "markup"),
        ("x onerror=alert(1)", "markup"),
        ("x onclick='go()'", "markup"),
    ],
)
def test_each_rule_refuses_with_its_code_and_says_why(text, code):
    with pytest.raises(TextRefused) as exc:
        clean(text, "the corrected question")
    assert exc.value.code == code and str(exc.value).startswith(f"{code}: the corrected question")
    assert "<" not in exc.value.detail  # the refusal names where, never repeats the markup


@pytest.mark.parametrize(
    "text",
    [
        "Why does he say 2 < 3 and I <3 you?",  # a "<" that opens no tag
        "AT&T and R&D; salt & pepper",
        "One line\nanother\twith a tab",
        "The onion = good; on time",
        "👨\u200d👩\u200d👧 family",  # a zero-width joiner inside an emoji sequence stays
        "می\u200cخواهم",  # a zero-width non-joiner in a Persian word stays
        "שלום עולם and العربية",  # right-to-left scripts are text; only the override controls are refused
    ],
)
def test_ordinary_text_passes_unchanged_but_for_its_outer_space(text):
    assert clean(f"  {text}  ", "the answer") == unicodedata.normalize("NFC", text)


def test_text_is_normalised_to_nfc_and_its_line_ends_to_newlines():
    assert clean("Cafe\u0301\r\nnai\u0308ve\rend", "x") == "Caf\u00e9\nna\u00efve\nend"
    with pytest.raises(TextRefused, match="control_character"):
        clean("one\ntwo", "x", multiline=False)
    assert clean("<i>wreck</i>", "x", plain=False) == "<i>wreck</i>"  # a field that is not plain text


def test_the_review_reader_applies_the_rules_to_every_typed_field():
    refused = {
        "question": sr.edit(question="\u200b\u200b"),
        "answer": sr.edit(answer="\x1bB"),
        "option": sr.edit(options="fine\n\u2060"),  # one option made of nothing visible
        "option_markup": sr.edit(options="fine\n<b>bold</b>"),
        "note": [*sr.reject("other"), sr.text("reason_note", "see \u202eereh")],
    }
    for case, result in refused.items():
        p = parse_annotation(result, {}, REASONS)
        assert p["verdict"] == "refused" and p["edits"] == {}, (case, p)
    assert parse_annotation(refused["option"], {}, REASONS)["refused"].startswith("invisible_only: corrected option 2")
    ok = parse_annotation(sr.edit(question="Cafe\u0301?", options="a\n\ne\u0308"), {}, REASONS)
    assert ok["edits"] == {"question": "Caf\u00e9?", "options": ["a", "\u00eb"]}
    blank_note = parse_annotation([*sr.reject("other"), sr.text("reason_note", "  ")], {}, REASONS)
    assert blank_note["verdict"] == "reject" and blank_note["note"] is None  # a blank note is no note


def test_an_unknown_to_name_and_a_skip_are_refused_never_an_accept():
    wrong = [{**sr.choice("verdict", "accept"), "to_name": "nowhere"}]
    assert parse_annotation(wrong, {}, REASONS)["refused"].startswith("unknown_target: 'verdict' names 'nowhere'")
    missing = [{k: v for k, v in sr.choice("verdict", "accept").items() if k != "to_name"}]
    assert parse_annotation(missing, {}, REASONS)["verdict"] == "refused"
    box_on_question = [sr.choice("verdict", "accept"), {**sr.box(0, 0.1, 0.1, 0.1, 0.1), "to_name": "question"}]
    assert parse_annotation(box_on_question, {"0": [0.1, 0.1, 0.1, 0.1]}, REASONS)["verdict"] == "refused"
    task = {
        "id": 3,
        "data": {"item_id": "v1", "revision": "r1"},
        "annotations": [{"id": 7, "result": [], "was_cancelled": True, "completed_by": 1, "updated_by": 1}],
    }
    (row,) = verdict_rows("vague", "review", 1, [task], {1: "r1@x"}, REASONS)
    assert (row["verdict"], row["refusal"], row["reviewer"]) == ("refused", SKIPPED, "r1@x")


STEP = HumanStep(
    name="annotate",
    corrects="stage",
    unit_key="unit_id",
    fields=(
        StepField("verdict", FieldKind.CHOICE, "", (("Yes", "Yes"), ("No", "No")), to="image"),
        StepField("explanation", FieldKind.TEXT, "", required=False, to="caption"),
        StepField("spans", FieldKind.SPANS, "", (("m", "m"),), required=False, to="caption"),
    ),
    display=(Display("image", "image"), Display("caption", "text")),
)


def _ans(**text) -> list[dict]:
    out = [{"from_name": "verdict", "to_name": "image", "type": "choices", "value": {"choices": ["Yes"]}}]
    for name, value in text.items():
        out.append({"from_name": name, "to_name": "caption", "type": "textarea", "value": {"text": [value]}})
    return out


def test_protocol_answers_pass_the_same_rules():
    assert form.read(STEP, _ans(explanation="Cafe\u0301 joke"))["explanation"] == "Caf\u00e9 joke"
    for bad, code in (("\u200b", "invisible_only"), ("x\x00", "control_character"), ("<script>", "markup")):
        with pytest.raises(form.Refused) as exc:
            form.read(STEP, _ans(explanation=bad))
        assert exc.value.code == code
    wrong = [{**_ans()[0], "to_name": "caption"}]
    with pytest.raises(form.Refused) as exc:
        form.read(STEP, wrong)
    assert exc.value.code == "unknown_target"
    span = {"start": 0, "end": 5, "text": "<i>wreck</i>", "labels": ["m"]}  # the caption's own markup
    got = form.read(STEP, [*_ans(), {"from_name": "spans", "to_name": "caption", "type": "labels", "value": span}])
    assert got["spans"][0]["text"] == "<i>wreck</i>"


def test_blind_answers_pass_the_same_rules_and_a_skip_is_kept_with_its_reason():
    def answer(aid: str, result: list, **kw) -> dict:
        return {"answer_id": aid, "item_id": "i1", "person": f"p{aid}@x", "annotation": {"result": result, **kw}}

    typed = lambda t: [{"from_name": "answer_text", "to_name": "question", "type": "textarea", "value": {"text": [t]}}]  # noqa: E731
    found = [
        answer("1", typed("Caf\u0065\u0301")),
        answer("2", typed("\u200b\u200b")),
        answer("3", typed("<script>x</script>")),
        answer("4", [{**sr.choice("choice", "A"), "to_name": "nowhere"}]),
        answer("5", [sr.choice("mood", "A")]),
        answer("6", [], was_cancelled=True),
    ]
    why = {r["answer_id"]: (r["excluded_reason"] or "") for r in pick(found, {})}
    assert why["1"] == "" and reply_of(found[0]["annotation"], "", []) == "Caf\u00e9"
    assert [why[k].split(":")[1].strip() for k in "23456"] == [
        "invisible_only",
        "markup",
        "unknown_target",
        "unknown_control",
        "skipped",
    ]
    assert refusal_of({"result": typed("fine")}) is None


def test_a_unit_annotation_passes_the_same_rules_for_every_member(tmp_path):
    from tests.review.test_review_units_logic import _pool, _rows, c, t

    items = _pool(tmp_path)
    n = len(items)
    hidden = _rows(items, [c("verdict", "edit"), t("m_question_1", "\u200b\u2060")])
    assert len(hidden) == n and {r["verdict"] for r in hidden} == {"refused"}
    assert hidden[0]["refusal"].startswith("invisible_only: the corrected question of member 2")
    shown_elsewhere = [c("verdict", "accept"), {**c("m_verdict_1", "reject"), "to_name": "m_text_2"}]
    assert {r["refusal"].split(":")[0] for r in _rows(items, shown_elsewhere)} == {"unknown_target"}
    padded = [c("verdict", "accept"), {**c("m_verdict_1", "reject"), "from_name": "m_verdict_01"}]
    assert {r["refusal"].split(":")[0] for r in _rows(items, padded)} == {"unknown_control"}
    fixed = _rows(items, [c("verdict", "edit"), t("m_question_1", "Cafe\u0301?")])
    assert [r for r in fixed if r["verdict"] == "edit"][0]["edits"] == '{"question": "Caf\u00e9?"}'
