"""The forms and what they carry, without a server: the blind baseline's task data holds nothing
of the gold, an edited answer moves the correct mark (and its option type), the generated forms
have fixed hotkeys, reasons with help text and a required reason, answers by someone who saw the
gold are not scored, and the adjudication form never prints "(nan)"."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pandas as pd

from forge.benchmarks.review_spec import Media, ReviewSpec
from forge.evals.human import pick
from forge.review.items import apply_edits, revision, task_data
from forge.review.labelconfig import human_config, review_config
from forge.review.stages import prior_text
from forge.review.verdicts import VERDICT_COLUMNS
from forge.storage import TableStore
from tests.review import world


def _hummus_classification(store: TableStore) -> dict:
    media = world.image(store.data_dir, "hum_cls", (10, 20, 30))
    return world.base(
        "hum_cls_1",
        "hummus",
        media,
        task="classification",
        category="Yes",
        question="Caption: the meeting could have been an email\n\nIs there a metaphor? Answer Yes or No.",
        options=["Yes", "No"],
        option_types=["positive", "negative"],
        answer="A",
        references=["Yes"],
        split="test",
        labels=json.dumps({"verdict": "Yes", "metaphors": ["MEETING IS PRISON"], "boxes": []}),
    )


def test_blind_task_data_carries_only_what_the_model_sees(tmp_path):
    item = _hummus_classification(TableStore(tmp_path))
    data = task_data(item, ReviewSpec(boxes=True), None, "human")
    assert set(data) == {"item_id", "revision", "question", "options_text", "image", "instruction"}
    assert data["item_id"] == data["revision"] != item["item_id"] and data["revision"] != revision(item)
    text = json.dumps(data)
    for leak in ("hum_cls_1", "classification", "positive", "negative", "GOLD", "test", "MEETING", "hummus"):
        assert leak not in text, leak
    assert data["options_text"] == "A) Yes\nB) No"  # the options, as the model gets them
    assert "(no options" not in data["options_text"]
    review = task_data(item, ReviewSpec(boxes=True), None, "review")
    assert "✓ GOLD" in review["options_text"] and review["item_id"] == "hum_cls_1"  # the review form keeps it


def test_the_blind_form_has_no_heading_gold_or_context():
    root = ET.fromstring(human_config(ReviewSpec(media=Media.VIDEO, boxes=True), max_options=4))
    values = " ".join(e.get("value", "") for e in root.iter())
    assert "$heading" not in values and "$answer_text" not in values and "$context_text" not in values
    assert [(c.get("value"), c.get("hotkey")) for c in root.iter("Choice")] == [
        ("A", "1"),
        ("B", "2"),
        ("C", "3"),
        ("D", "4"),
    ]
    assert any(e.tag == "RectangleLabels" for e in root.iter())  # a box benchmark answers with a box


def test_review_form_hotkeys_reasons_and_fields():
    spec = ReviewSpec(boxes=True, editable=("question", "options", "answer", "box"))
    root = ET.fromstring(review_config(spec))
    choices = {c.get("value"): c for c in root.iter("Choice")}
    assert {v: choices[v].get("hotkey") for v in ("accept", "reject", "edit")} == {
        "accept": "a",
        "reject": "x",
        "edit": "e",
    }
    assert [choices[r].get("hotkey") for r in spec.reasons] == [str(i) for i in range(1, len(spec.reasons) + 1)]
    assert all(choices[r].get("hint") for r in spec.reasons)  # help text on hover
    help_ = next(t.get("value") for t in root.iter("Text") if t.get("name") == "reason_help")
    # visible under the reasons, each with its consequence (ReviewSpec.consequences)
    assert "1  wrong_gold: the marked answer is not the right one; then: drops this item only" in help_.splitlines()
    reason = next(c for c in root.iter("Choices") if c.get("name") == "reason")
    assert reason.get("required") == "true"
    fields = {t.get("name"): t for t in root.iter("TextArea")}
    assert int(fields["corrected_options"].get("rows")) >= 4  # a real multi-line field, one option per line
    assert str(spec.limits.question) in fields["corrected_question"].get("placeholder")
    assert str(spec.limits.option) in fields["corrected_options"].get("placeholder")
    assert "reason_note" in fields
    # the same keys in every benchmark: only the reasons' own list differs
    other = ET.fromstring(review_config(ReviewSpec(reasons=("a_reason", "b_reason"))))
    assert [c.get("hotkey") for c in other.iter("Choice")] == ["a", "x", "e", "1", "2"]


def test_an_edited_answer_moves_the_correct_mark(tmp_path):
    store = TableStore(tmp_path)
    vague = world.vague(store, n=1).to_dict("records")[0]  # A correct; B FS, C SU, D NE
    vague["references"] = ["Mop the floor 1"]  # as the VAGUE recipe writes it: the correct option's text
    new, why = apply_edits(vague, {"answer": "c"}, tmp_path)
    assert why == "" and new["answer"] == "C"
    assert list(new["option_types"]) == ["SU", "FS", "correct", "NE"]  # D→A rule: A and C swap their types
    assert list(new["references"]) == ["Sing a song"]
    maia = world.maia(store, n=1).to_dict("records")[0]
    new, _ = apply_edits(maia, {"answer": "B"}, tmp_path)
    assert list(new["option_types"]) == ["foil_action", "correct"]
    # an option typed as its text stands for its letter; types that mark no "correct" describe the options
    cls = _hummus_classification(store)
    new, why = apply_edits(cls, {"answer": "No"}, tmp_path)
    assert why == "" and new["answer"] == "B" and list(new["references"]) == ["No"]
    assert list(new["option_types"]) == ["positive", "negative"]
    # edited options: the references follow the gold option's new text
    new, _ = apply_edits(vague, {"options": ["Mop it", "Open the window", "Sing a song", "Buy a hat"]}, tmp_path)
    assert list(new["references"]) == ["Mop it"] and list(new["option_types"]) == list(vague["option_types"])
    # several correct answers (ViMU): gained and lost swap; an option left over takes the common type
    multi = {**vague, "answer": "A,B", "option_types": ["correct", "correct", "distractor", "distractor"]}
    multi["references"] = None
    new, _ = apply_edits(multi, {"answer": "D, C, B"}, tmp_path)
    assert new["answer"] == "B,C,D" and list(new["option_types"]) == ["distractor", "correct", "correct", "correct"]
    new, _ = apply_edits(multi, {"answer": "C"}, tmp_path)
    assert list(new["option_types"]) == ["distractor", "distractor", "correct", "distractor"]
    every = {**multi, "options": ["a", "b"], "option_types": ["correct", "correct"]}
    new, why = apply_edits(every, {"answer": "A"}, tmp_path)
    assert new is None and why.startswith("option_types")  # no other type to give B: refused, not guessed


def test_an_answer_by_someone_who_saw_the_gold_is_not_scored():
    t = pd.Timestamp("2026-01-01", tz="UTC")
    chose_a = {
        "result": [{"from_name": "choice", "to_name": "question", "type": "choices", "value": {"choices": ["A"]}}]
    }
    found = [
        {"answer_id": "9:1", "item_id": "v1", "person": "r1@x", "created_at": t},
        {"answer_id": "9:2", "item_id": "v1", "person": "p1@x", "created_at": t + pd.Timedelta(1, "min")},
        {"answer_id": "9:3", "item_id": "v1", "person": "p2@x", "created_at": t + pd.Timedelta(2, "min")},
        {"answer_id": "9:4", "item_id": "v2", "person": "r1@x", "created_at": t},
        {"answer_id": "9:5", "item_id": "v1", "person": "p1@x", "created_at": t + pd.Timedelta(3, "min")},
    ]
    for r in found:
        r["annotation"] = chose_a
    seen = {("v1", "r1@x"): "saw_gold: review verdict 3:7 on the item"}
    out = {r["answer_id"]: (r["used"], r["excluded_reason"]) for r in pick(found, seen)}
    assert out == {
        "9:1": (False, "saw_gold: review verdict 3:7 on the item"),
        "9:2": (True, None),
        "9:3": (True, None),  # each person's answers make their own baseline
        "9:4": (True, None),  # r1 reviewed v1 only
        "9:5": (False, "later_answer: the person's earlier answer is scored"),
    }


def test_adjudication_shows_no_nan_reason():
    rows = pd.DataFrame(
        [
            {**dict.fromkeys(VERDICT_COLUMNS), "reviewer": "r1", "verdict": "accept", "reason": float("nan")},
            {**dict.fromkeys(VERDICT_COLUMNS), "reviewer": "r2", "verdict": "reject", "reason": "ambiguous"},
        ]
    )
    assert prior_text(rows) == "r1: accept\nr2: reject (ambiguous)"


def test_the_verdict_sits_above_a_clip_player_or_a_boxed_image():
    """MAIA and ViMU (a clip player and its frame) and Hummus (an image with boxes): the verdict, its
    reasons and corrections come first, under the task's heading; II-Bench and VAGUE keep the media
    first (issue #53)."""
    from forge.benchmarks.registry import get

    def order(name: str) -> list[str]:
        root = ET.fromstring(review_config(get(name).review))
        return [el.get("name") or el.get("value") for el in root if el.get("name") in ("verdict", "image", "video")
                or el.get("value") == "$heading"]  # fmt: skip

    assert order("maia") == ["$heading", "verdict", "video", "image"]
    assert order("hummus") == ["$heading", "verdict", "image"]
    assert order("vague") == ["image", "$heading", "verdict"]
    assert order("iibench") == ["image", "$heading", "verdict"]


def test_member_blocks_take_no_hotkey_however_many_members():
    """Label Studio gives every choice without a hotkey the next free key, until they run out: every
    member-block choice carries the no-key placeholder, the unit's own keys stay (issue #53)."""
    from forge.benchmarks.registry import get
    from forge.review.labelconfig import NO_HOTKEY

    root = ET.fromstring(review_config(get("maia").review))
    repeated = [c for rep in root.iter("Repeater") for c in rep.iter("Choice")]
    assert repeated and {c.get("hotkey") for c in repeated} == {NO_HOTKEY}
    assert NO_HOTKEY.isprintable() and ord(NO_HOTKEY) > 255  # no key event carries it
    top = {c.get("value"): c.get("hotkey") for ch in root if ch.tag == "Choices" for c in ch}
    assert top == {"accept": "a", "reject": "x", "edit": "e"}
