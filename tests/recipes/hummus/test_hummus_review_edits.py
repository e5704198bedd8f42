"""Hummus: a reviewer's verdict propagates as the recipe would build it (assets/recipes/hummus/logic/
review.py), plain functions and the gate, no server (the Label Studio flow is in
test_review_consequences_flow.py)."""

from __future__ import annotations

import json

import pandas as pd

from assets.recipes.hummus.logic import items as H
from assets.recipes.hummus.logic.review import (
    follow_edit,
    keep_verdicts,
    kept_verdict_problem,
    kept_verdicts,
    recipe_drops,
)
from forge.benchmarks import registry
from forge.review import gate
from forge.review.items import revision
from forge.review.verdicts import VERDICT_COLUMNS
from tests.review.test_review_logic import _v


def annotation(verdict: str = "Yes", frame: str = "img_p1") -> dict:
    return {
        "annotation_id": f"hma_{frame}",
        "frame_id": frame,
        "item_id": f"src_{frame}",
        "source": "capcon",
        "channel": None,
        "batch": "b1",
        "path": f"media/images/{frame}.png",
        "caption": "Our sex life is a train wreck.",
        "caption_origin": "source",
        "width": 200,
        "height": 100,
        "verdict": verdict,
        "metaphors": ["SEX LIFE IS A TRAIN"] if verdict != "No" else [],
        "devices": ["hyperbole"],
        "caption_highlighted": "Our sex life is a <i>train wreck</i>." if verdict != "No" else None,
        "explanation": "The wreck on the tracks stands for the marriage." if verdict != "No" else None,
        "backend": "openai",
        "model": "gpt-test",
        "prompt_hash": "p1",
        "detail_reject": None,
    }


REGION = {
    "region_index": 0,
    "label": "train",
    "box_norm_top": 0.1,
    "box_norm_left": 0.2,
    "box_norm_height": 0.3,
    "box_norm_width": 0.4,
    "box_px_x0": 40,
    "box_px_y0": 10,
    "box_px_x1": 120,
    "box_px_y1": 40,
}


def pair(verdict: str = "Yes", frame: str = "img_p1") -> pd.DataFrame:
    rows = H.build_items(annotation(verdict, frame), [REGION] if verdict != "No" else [])
    return pd.DataFrame(rows).assign(split="test")


def _cls(items: pd.DataFrame) -> dict:
    return items[items["task"] == "classification"].iloc[0].to_dict()


def test_an_edited_classification_reads_as_the_recipe_builds_that_verdict():
    yes = _cls(pair("Yes"))
    edited = follow_edit(yes, {**yes, "answer": "B", "references": ["No"]})
    built_no = _cls(pair("No"))  # what hummus_items makes of the same pair annotated No
    assert json.loads(edited["labels"])["verdict"] == "No" and edited["category"] == "No"
    assert revision(edited) == revision(built_no)  # the same revision: the recipe adopts the edit
    widlii = _cls(pair("WIDLII"))
    assert follow_edit(widlii, {**widlii, "answer": "A"}) == {**widlii, "answer": "A"}  # still positive
    box = pair("Yes").query("task == 'image_box'").iloc[0].to_dict()
    assert follow_edit(box, {**box, "answer": "x"}) == {**box, "answer": "x"}  # only Classification follows
    no = _cls(pair("No"))
    back = follow_edit(no, {**no, "answer": "A", "references": ["Yes"]})
    assert json.loads(back["labels"])["verdict"] == "Yes" and back["category"] == "Yes"


def test_a_pair_edited_to_no_keeps_no_detail_items():
    items = pd.concat([pair("Yes", "img_p1"), pair("Yes", "img_p2")], ignore_index=True)
    assert recipe_drops(items) == {}
    cls = _cls(items[items["unit_id"] == "img_p1"])
    i = items.index[items["item_id"] == cls["item_id"]][0]
    items.loc[i, "labels"] = follow_edit(cls, {**cls, "answer": "B"})["labels"]
    drops = recipe_drops(items)
    details = set(items.loc[(items["unit_id"] == "img_p1") & (items["task"] != "classification"), "item_id"])
    assert set(drops) == details and len(details) == 5
    assert {by for _, by in drops.values()} == {cls["item_id"]}
    assert all(why.startswith("verdict_edited: the pair's verdict is No") for why, _ in drops.values())


def test_the_gate_applies_a_verdict_edit_to_the_pair():
    """Yes -> No in the form: the Classification's labels follow, its five detail items leave with
    the reason; once hummus_items rebuilds the pair from the kept No, the edit still counts."""
    rs = registry.get("hummus").review
    items = pair("Yes")
    cls = _cls(items)
    rows = [_v(cls["item_id"], revision(cls), "a", "edit", n=1, edits=json.dumps({"answer": "B"}))]
    rows += [_v(i, revision(r), "a", "accept", n=2) for i, r in zip(items["item_id"], items.to_dict("records"))]
    v = pd.DataFrame(rows, columns=VERDICT_COLUMNS)
    res = gate.resolve(
        items, v, rs, None, hooks=registry.get("hummus").hooks
    )  # no media files: nothing here checks a box
    assert res.status[cls["item_id"]] == "accepted"
    details = [i for i in items["item_id"] if i != cls["item_id"]]
    assert {res.status[i] for i in details} == {"rejected"}
    assert all(res.reasons[i].startswith("verdict_edited") for i in details)
    now = res.items.set_index("item_id").loc[cls["item_id"]]
    assert json.loads(now["labels"])["verdict"] == "No" and now["answer"] == "B"
    assert kept_verdicts(res.items) == {"img_p1": "No"}  # what hummus_annotations keeps
    # the recipe rebuilds the pair from the kept verdict: Classification only, the edit adopted
    rebuilt = pair("No")
    again = gate.resolve(rebuilt, res.verdicts, rs, None, hooks=registry.get("hummus").hooks)
    assert again.status == {cls["item_id"]: "accepted"}
    row = again.verdicts[again.verdicts["verdict"] == "edit"].iloc[0]
    assert row["edit_status"] == "applied" and not bool(row["stale"])
    assert "a" in json.loads(again.items.iloc[0]["extra"])["edited_by"]


def test_the_annotation_stage_keeps_peoples_verdicts():
    assert kept_verdict_problem("Yes", "No") and kept_verdict_problem("WIDLII", "Discard")
    assert kept_verdict_problem("Yes", "WIDLII") is None and kept_verdict_problem("No", "Yes") is None
    yes = {**annotation("Yes"), "repairs": [], "n_regions": 1}
    regions = [{**REGION, "annotation_id": yes["annotation_id"]}]
    rows, regs = keep_verdicts([yes], regions, {"img_p1": "No"})  # a No decided by people: details go
    assert rows[0]["verdict"] == "No" and rows[0]["metaphors"] == [] and rows[0]["n_regions"] == 0 and regs == []
    assert "kept from review" in rows[0]["repairs"][0]
    no = {**annotation("No"), "repairs": [], "n_regions": 0}
    rows, _ = keep_verdicts([no], [], {"img_p1": "Yes"})  # the reply flipped to No: the Yes stays, verdict only
    assert rows[0]["verdict"] == "Yes" and rows[0]["detail_reject"] == "verdict_kept"
    assert [r["task"] for r in H.build_items(rows[0], [])] == ["classification"]  # the pair is not dropped
    assert keep_verdicts([yes], regions, {}) == ([yes], regions)
