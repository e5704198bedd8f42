"""Review units without a server (issue #44): reading a unit annotation exactly or refusing it, an
edit that breaks its pool refused with its reason (the original stays), an adjudicator who reviewed
the pool not counted, re-reading never duplicating a row, and the unit form's XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from forge.benchmarks.registry import get
from forge.review import gate, units
from forge.review.items import revision
from forge.review.labelconfig import review_config
from forge.review.verdicts import VERDICT_COLUMNS, merge, verdict_rows
from forge.storage import TableStore
from tests.review import world

SPEC = get("maia").review
HOOKS = get("maia").hooks  # its member check (logic/review.py)


def _pool(tmp_path, **kw) -> pd.DataFrame:
    store = TableStore(tmp_path)
    return world.write_gated(store, "maia", world.maia_pool(store, "q1", **kw))


def _data(items: pd.DataFrame) -> dict:
    ((key, members),) = units.groups(items, SPEC.unit).items()
    return units.unit_task_data(key, members, SPEC, None)


def _to(name: str) -> str:
    """The object a control of the unit form is about (its ``toName``)."""
    m = units.MEMBER_NAME.match(name) or units.PART_NAME.match(name)
    if m is None:
        return "question"
    return f"p_text_{m.group(1)}" if name.startswith("p_") else f"m_text_{m.group(2)}"


def c(name: str, value: str) -> dict:
    return {"from_name": name, "to_name": _to(name), "type": "choices", "value": {"choices": [value]}}


def t(name: str, value: str) -> dict:
    return {"from_name": name, "to_name": _to(name), "type": "textarea", "value": {"text": [value]}}


def _rows(items, result, who=1, kind="review", aid=9) -> list[dict]:
    task = {
        "id": 5,
        "data": _data(items),
        "annotations": [
            {
                "id": aid,
                "result": result,
                "completed_by": who,
                "updated_by": who,
                "lead_time": 90,
                "created_at": f"2026-01-01T00:00:0{aid % 10}Z",
                "updated_at": f"2026-01-01T00:00:0{aid % 10}Z",
            }
        ],
    }
    return verdict_rows("maia", kind, 1, [task], {1: "r1", 2: "r2"}, SPEC.reasons, SPEC.limits)


@pytest.mark.parametrize(
    ("result", "code"),
    [
        ([c("verdict", "accept"), t("p_edit_2", "A new answer.")], "accept_with_corrections"),
        ([c("verdict", "edit")], "edit_without_changes"),
        ([c("verdict", "accept"), c("m_verdict_3", "reject")], "no_reason"),
        ([c("verdict", "reject")], "no_reason"),
        ([c("verdict", "accept"), c("m_verdict_12", "reject")], "unknown_control"),
        ([c("verdict", "edit"), t("p_edit_8", "a ninth answer")], "unknown_control"),
        ([c("verdict", "edit"), t("p_edit_1", "   ")], "empty_field"),
        ([c("verdict", "reject"), c("reason", "ambiguous"), t("p_edit_1", "x")], "reject_with_corrections"),
        ([c("verdict", "edit"), t("corrected_question", "Why?")], "unit_correction"),
    ],
)
def test_a_unit_annotation_is_read_exactly_or_refused_for_every_member(tmp_path, result, code):
    rows = _rows(_pool(tmp_path), result)
    assert len(rows) == 9 and {r["verdict"] for r in rows} == {"refused"}
    assert {r["refusal"].split(":")[0] for r in rows} == {code}


def test_a_unit_verdict_applies_to_every_member_a_block_leaves_unmarked(tmp_path):
    items = _pool(tmp_path)
    rows = _rows(items, [c("verdict", "accept"), c("m_verdict_2", "reject"), c("m_reason_2", "wrong_gold")])
    by = {r["item_id"]: (r["member"], r["verdict"], r["reason"]) for r in rows}
    assert by["q1_sv2"] == ("member 3", "reject", "wrong_gold") and by["q1_oe"] == ("unit", "accept", None)
    assert len({r["verdict_id"] for r in rows}) == 9 and all(
        r["verdict_id"].startswith("1:9@20260101T000009.000000Z:") for r in rows
    )
    v = pd.DataFrame(rows, columns=VERDICT_COLUMNS)
    again = merge(merge(pd.DataFrame(columns=VERDICT_COLUMNS), rows, {5}, {5}), rows, {5}, {5})
    assert len(again) == 9  # re-reading replaces, never duplicates
    res = gate.resolve(items, v, SPEC, tmp_path, hooks=HOOKS)
    kept, out = gate.export_filter(res, SPEC.policy, SPEC.unit)
    assert kept.empty and out["rejected"] == ["q1_sv2"] and len(out["held_back"]) == 8  # 8 pairs or none


def _edited(tmp_path, items, edits_by_item: dict[str, dict]) -> gate.Resolution:
    revs = {r["item_id"]: revision(r) for r in items.to_dict("records")}
    rows = []
    for n, (iid, e) in enumerate(edits_by_item.items()):
        rows.append(
            {
                **dict.fromkeys(VERDICT_COLUMNS),
                "verdict_id": f"1:{n}:{iid}",
                "item_id": iid,
                "revision": revs[iid],
                "member": "member 3",
                "project_kind": "review",
                "reviewer": "r1",
                "verdict": "edit",
                "edits": json.dumps(e),
                "stale": False,
                "created_at": pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(seconds=n),
                "updated_at": pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(seconds=n),
            }
        )
    return gate.resolve(items, pd.DataFrame(rows, columns=VERDICT_COLUMNS), SPEC, tmp_path, hooks=HOOKS)


@pytest.mark.parametrize(
    ("item", "edit", "why"),
    [
        ("q1_oe", {"references": [f"answer {i}" for i in range(7)]}, "unit_size: the edit leaves 7 answers"),
        (
            "q1_oe",
            {"references": {"4": "Pool q1: the cook leaves because the oven number 1 is too hot."}},
            "duplicate_member",
        ),
        (
            "q1_sv2",
            {"options": ["The cook in q1 opens oven number 5.", "The cook in q1 closes oven number 2."]},
            "duplicate_statement",
        ),
        (
            "q1_sv2",
            {"options": ["The cook in q1 opens oven number 2.", "A dog barks loudly at night outside."]},
            "not_minimal_edit",
        ),
        (
            "q1_sv2",
            {"options": ["The cook in q1 opens oven number 2.", "The cook in q1 opens oven number 2."]},
            "identical_foil",
        ),
    ],
)
def test_an_edit_that_breaks_the_pool_is_refused_and_the_original_stays(tmp_path, item, edit, why):
    items = _pool(tmp_path)
    res = _edited(tmp_path, items, {item: edit})
    row = res.verdicts.iloc[0]
    assert row.edit_status == "refused" and why in row.edit_note
    before = items.set_index("item_id").loc[item]
    after = res.items.set_index("item_id").loc[item]
    assert revision({**after.to_dict(), "item_id": item}) == revision({**before.to_dict(), "item_id": item})


def test_a_foil_fixed_by_a_minimal_edit_is_applied_and_only_its_pair_changes(tmp_path):
    items = _pool(tmp_path, flags={"foil 2": "structural_invalid: the foil is not a minimal edit"})
    res = _edited(
        tmp_path,
        items,
        {"q1_sv2": {"options": ["The cook in q1 opens oven number 2.", "The cook in q1 opens oven number 9."]}},
    )
    assert res.verdicts.iloc[0].edit_status == "applied"
    before = {r["item_id"]: revision(r) for r in items.to_dict("records")}
    after = {r["item_id"]: revision(r) for r in res.items.to_dict("records")}
    assert [i for i in before if before[i] != after[i]] == ["q1_sv2"]
    extra = json.loads(res.items.set_index("item_id").loc["q1_sv2", "extra"])
    assert [(f["member"], f["outcome"]) for f in extra["flags_reviewed"]] == [("foil 2", "fixed")]


def test_an_adjudicator_who_reviewed_the_pool_does_not_count(tmp_path):
    note = "pool_contradiction: answers [2] contradict the others"
    items = _pool(tmp_path, flags={"answer 2": note})
    res = gate.resolve(items, pd.DataFrame(columns=VERDICT_COLUMNS), SPEC, tmp_path, hooks=HOOKS)
    assert set(res.status.values()) == {"disputed"}  # straight to adjudication
    review = _rows(items, [c("verdict", "accept")], who=1, aid=1)
    same = _rows(items, [c("verdict", "accept")], who=1, kind="adjudication", aid=2)
    for r in same:
        r["verdict_id"] = r["verdict_id"].replace("1:", "2:", 1)
    res = gate.resolve(items, pd.DataFrame(review + same, columns=VERDICT_COLUMNS), SPEC, tmp_path, hooks=HOOKS)
    assert set(res.status.values()) == {"disputed"}
    assert (
        res.verdicts.loc[res.verdicts.project_kind == "adjudication", "flag"]
        .str.startswith("adjudicator_reviewed")
        .all()
    )
    other = _rows(items, [c("verdict", "accept")], who=2, kind="adjudication", aid=3)
    for r in other:
        r["verdict_id"] = r["verdict_id"].replace("1:", "3:", 1)
    res = gate.resolve(items, pd.DataFrame(review + same + other, columns=VERDICT_COLUMNS), SPEC, tmp_path, hooks=HOOKS)
    assert set(res.status.values()) == {"accepted"}


def test_the_unit_form_repeats_a_block_per_member_and_per_answer():
    root = ET.fromstring(review_config(SPEC))
    reps = root.findall("Repeater")
    assert [r.get("on") for r in reps] == ["$members", "$parts"]
    names = {e.get("name") for r in reps for e in r.iter() if e.get("name")}
    assert {"m_verdict_{{idx}}", "m_reason_{{idx}}", "m_options_{{idx}}", "p_edit_{{idx}}"} <= names
    assert ET.fromstring(review_config(get("vague").review)).find("Repeater") is None  # VAGUE: the item is the unit


def test_a_hummus_pair_is_one_unit_and_a_pair_edited_to_no_still_exports_its_classification():
    """The pair (extra.annotation_id) goes out whole, except the detail items the recipe no longer
    builds once the verdict is edited to No: they leave, the Classification is exported."""
    from tests.recipes.hummus.test_hummus_review_edits import _cls, pair
    from tests.review.test_review_logic import _v

    rs = get("hummus").review
    items = pair("Yes")
    (members,) = units.groups(items, rs.unit).values()
    assert len(members) == len(items) > 1  # one task for the annotation and its items
    cls = _cls(items)
    rows = [_v(cls["item_id"], revision(cls), "a", "edit", n=1, edits=json.dumps({"answer": "B"}))]
    rows += [_v(i, revision(r), "a", "accept", n=2) for i, r in zip(items["item_id"], items.to_dict("records"))]
    res = gate.resolve(items, pd.DataFrame(rows, columns=VERDICT_COLUMNS), rs, None, hooks=get("hummus").hooks)
    kept, out = gate.export_filter(res, rs.policy, rs.unit)
    assert kept["item_id"].tolist() == [cls["item_id"]] and not out["held_back"]
    # a detail item a reviewer rejected holds its pair back whole
    one = next(i for i in items["item_id"] if i != cls["item_id"])
    rows = [
        _v(i, revision(r), "a", "reject" if i == one else "accept", n=2)
        for i, r in zip(items["item_id"], items.to_dict("records"))
    ]
    res = gate.resolve(items, pd.DataFrame(rows, columns=VERDICT_COLUMNS), rs, None, hooks=get("hummus").hooks)
    kept, out = gate.export_filter(res, rs.policy, rs.unit)
    assert kept.empty and out["rejected"] == [one] and len(out["held_back"]) == len(items) - 1


def test_the_unit_reader_knows_every_control_of_the_unit_form():
    """Every control of the unit form (block 0 of each Repeater) is read with the type Label Studio
    gives it; none is refused as unknown (the item form's corrections are refused as unit_correction)."""
    types = {"Choices": "choices", "TextArea": "textarea", "RectangleLabels": "rectanglelabels"}
    for adjudication in (False, True):
        root = ET.fromstring(review_config(SPEC, adjudication=adjudication))
        for e in root.iter():
            if e.get("toName") and e.get("name") not in units.ITEM_FIELDS:  # those: a task of one item
                name, to = (e.get(k).replace("{{idx}}", "0") for k in ("name", "toName"))
                result = [{"from_name": name, "to_name": to, "type": types[e.tag], "value": {}}]
                units._check_names(result, 1, 1)  # raises UnitRefused for an unknown control or target


def test_a_refused_unit_annotation_goes_back_once_as_the_units_task(tmp_path):
    from forge.review import loop

    items = _pool(tmp_path)
    rows = _rows(items, [c("verdict", "edit")])  # edit_without_changes: refused for all 9 members
    res = gate.resolve(items, pd.DataFrame(rows, columns=VERDICT_COLUMNS), SPEC, tmp_path, hooks=HOOKS)
    back = loop.returned("maia", res.verdicts, res.items, SPEC, {})
    (key,) = back
    assert key == "returned:1:9@20260101T000009.000000Z" and len(back[key].data["members"]) == 9
    assert back[key].data["returned_to"] == "r1" and "edit_without_changes" in back[key].data["returned_reason"]


def test_a_box_moved_in_a_hummus_pair_task_edits_every_member_that_carries_it():
    from tests.recipes.hummus.test_hummus_review_edits import pair

    rs = get("hummus").review
    items = pair("Yes")
    ((key, members),) = units.groups(items, rs.unit).items()
    data = units.unit_task_data(key, members, rs, None)
    moved = {"0": [0.2, 0.3, 0.3, 0.4]}
    rows = units.parse_unit([c("verdict", "accept")], data, rs.reasons, rs.limits, moved)
    boxed = {m["item_id"] for m in data["members"] if m["boxes"]}
    assert boxed and {r["item_id"] for r in rows if r["verdict"] == "edit"} == boxed  # the accept became an edit
    assert all(r["edits"]["boxes"] == moved for r in rows if r["item_id"] in boxed)
    drawn = units.parse_unit([c("verdict", "accept")], data, rs.reasons, rs.limits, "box_drawn: a new box was drawn")
    assert {r["refused"] for r in drawn} == {"box_drawn: a new box was drawn"}
