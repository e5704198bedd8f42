"""Silent reads closed without a server (issue #55, point 5, and verdict identity): a unit answer is
never an unanswered member's accept where the paper's people judged each member
(``ReviewSpec.member_answers = required``); a replaced database's annotation that reuses an old
one's ids keeps its own verdict row beside the old one; a skip is something the sensor reads."""

from __future__ import annotations

import pandas as pd
import pytest

from forge.benchmarks.registry import get
from forge.benchmarks.review_spec import MemberAnswers, ReviewSpec
from forge.people import read
from forge.people.verdict_ids import annotation_ref
from forge.review import gate, units
from forge.review.labelconfig import review_config
from forge.review.status import returned
from forge.review.verdicts import VERDICT_COLUMNS, merge, verdict_rows
from tests.recipes.hummus.test_hummus_review_edits import pair
from tests.review.test_review_units_logic import c, t

HUMMUS = get("hummus").review


def _unit(items: pd.DataFrame, spec: ReviewSpec) -> dict:
    ((key, members),) = units.groups(items, spec.unit).items()
    return units.unit_task_data(key, members, spec, None)


def _annotation(aid: int, result: list, created: str = "2026-01-01T00:00:00Z", **kw) -> dict:
    return {
        "id": aid,
        "result": result,
        "completed_by": 1,
        "updated_by": 1,
        "lead_time": 60,
        "created_at": created,
        "updated_at": kw.pop("updated", created),
        **kw,
    }


def _read(items: pd.DataFrame, annotations: list[dict], spec: ReviewSpec = HUMMUS, pid: int = 3) -> list[dict]:
    task = {"id": 11, "data": _unit(items, spec), "annotations": annotations}
    return verdict_rows("hummus", "review", pid, [task], {1: "r1@t"}, spec.reasons, spec.limits, spec.member_answers)


def test_each_paper_declares_whether_a_unit_verdict_covers_its_members():
    declared = {n: get(n).review.member_answers for n in ("hummus", "iibench", "maia", "vimu", "vague")}
    assert declared == {
        "hummus": MemberAnswers.REQUIRED,
        "iibench": MemberAnswers.REQUIRED,
        "maia": MemberAnswers.UNIT_COVERS,
        "vimu": MemberAnswers.UNIT_COVERS,
        "vague": MemberAnswers.UNIT_COVERS,
    }
    with pytest.raises(ValueError, match="MemberAnswers"):
        ReviewSpec(member_answers="every")  # a typo names the values


def test_an_accept_posted_to_a_hummus_unit_is_no_members_accept(tmp_path):
    items = pair("Yes")
    assert len(items) == 6  # the Classification item and its 5 detail items
    rows = _read(items, [_annotation(4, [c("verdict", "accept")])])
    assert len(rows) == 6 and {r["verdict"] for r in rows} == {"refused"}
    assert all(r["refusal"].startswith("member_unanswered: member ") and r["member"] == "unit" for r in rows)
    res = gate.resolve(items, pd.DataFrame(rows, columns=VERDICT_COLUMNS), HUMMUS, tmp_path)
    assert set(res.status.values()) == {"pending"}  # none accepted: the export holds them back
    back = returned("hummus", res.verdicts)
    assert set(back["item_id"]) == set(items["item_id"]) and set(back["reviewer"]) == {"r1@t"}

    # the same accept where the unit covers its members (today's MAIA reading), recorded as such
    covers = _read(items, [_annotation(4, [c("verdict", "accept")])], ReviewSpec(unit=HUMMUS.unit))
    assert {(r["verdict"], r["member"]) for r in covers} == {("accept", "unit")}


def test_members_answered_in_their_blocks_count_and_only_the_unanswered_go_back(tmp_path):
    items = pair("Yes")
    n = len(items)
    every = [c("verdict", "accept"), *(c(f"m_verdict_{i}", "accept") for i in range(n))]
    rows = _read(items, [_annotation(4, every)])
    assert {(r["verdict"], r["member"]) for r in rows} == {("accept", f"member {i + 1}") for i in range(n)}
    res = gate.resolve(items, pd.DataFrame(rows, columns=VERDICT_COLUMNS), HUMMUS, tmp_path)
    assert set(res.status.values()) == {"accepted"}

    # member 1 accepted, member 2 rejected with its reason, member 3 corrected, the rest unanswered
    some = [
        c("verdict", "edit"),
        c("m_verdict_0", "accept"),
        c("m_verdict_1", "reject"),
        c("m_reason_1", "other"),
        t("m_question_2", "Which region carries the metaphor?"),
    ]
    rows = _read(items, [_annotation(5, some)])
    got = [(r["member"], r["verdict"]) for r in rows]
    assert got[:3] == [("member 1", "accept"), ("member 2", "reject"), ("member 3", "edit")]
    assert got[3:] == [("unit", "refused")] * (n - 3)
    assert "member_unanswered: member 4" in rows[3]["refusal"]

    # a unit reject still rejects every member; a member accepted in a rejected unit is refused whole
    rej = _read(items, [_annotation(6, [c("verdict", "reject"), c("reason", "bad_media")])])
    assert {(r["verdict"], r["reason"]) for r in rej} == {("reject", "bad_media")}
    odd = _read(items, [_annotation(7, [c("verdict", "reject"), c("reason", "bad_media"), c("m_verdict_0", "accept")])])
    assert {r["refusal"].split(":")[0] for r in odd} == {"accept_in_rejected_unit"}
    both = _read(items, [_annotation(8, [c("verdict", "edit"), c("m_verdict_2", "accept"), some[-1]])])
    assert {r["refusal"].split(":")[0] for r in both} == {"accept_with_corrections"}


def test_a_moved_box_is_no_answer_for_a_member_that_gave_none():
    items = pair("Yes")
    data = _unit(items, HUMMUS)
    moved = {"0": [0.2, 0.3, 0.3, 0.4]}
    boxed = [i for i, m in enumerate(data["members"]) if m["boxes"]]
    assert boxed
    answered = [c("verdict", "accept"), c(f"m_verdict_{boxed[0]}", "accept")]
    rows = units.parse_unit(answered, data, HUMMUS.reasons, HUMMUS.limits, moved, HUMMUS.member_answers)
    first = rows[boxed[0]]
    assert first["verdict"] == "edit" and first["edits"]["boxes"] == moved  # its accept with the box: an edit
    assert all(r["verdict"] == "refused" for i, r in enumerate(rows) if i != boxed[0])


def test_the_form_asks_each_member_for_its_answer_where_the_paper_did():
    import xml.etree.ElementTree as ET

    def member_choices(spec: ReviewSpec) -> list[str]:
        root = ET.fromstring(review_config(spec))
        block = next(ch for ch in root.iter("Choices") if ch.get("name") == "m_verdict_{{idx}}")
        return [ch.get("value") for ch in block.iter("Choice")]

    assert member_choices(HUMMUS) == ["accept", "reject"]
    assert member_choices(get("maia").review) == ["reject"]
    assert "each member needs its own answer" in review_config(HUMMUS)


# -- verdict identity across a replaced database --------------------------------------------------


def _vague_task(annotations: list[dict], task_id: int = 7) -> dict:
    return {"id": task_id, "data": {"item_id": "v1", "revision": "r1"}, "annotations": annotations}


def _item_rows(annotations: list[dict], task_id: int = 7) -> list[dict]:
    rs = get("vague").review
    return verdict_rows("vague", "review", 2, [_vague_task(annotations, task_id)], {1: "r1@t"}, rs.reasons)


def test_an_annotation_that_reuses_an_old_ones_ids_keeps_both_verdicts():
    before = _item_rows([_annotation(1, [c("verdict", "accept")], "2026-01-01T10:00:00Z")])
    (vid,) = [r["verdict_id"] for r in before]
    assert vid == "2:1@20260101T100000.000000Z" and annotation_ref(vid) == "2:1"
    prev = merge(pd.DataFrame(), before, {7}, {7})
    # a new database: project 2, task 7, annotation 1 again, another person's reject, made later
    after = _item_rows([_annotation(1, [c("verdict", "reject"), c("reason", "other")], "2026-03-01T09:00:00Z")])
    both = merge(prev, after, {7}, {7})
    assert sorted(both["verdict"]) == ["accept", "reject"] and both["verdict_id"].is_unique
    # the same annotation read again (updated) still replaces its row
    again = _item_rows([_annotation(1, [c("verdict", "edit"), t("corrected_answer", "B")], "2026-03-01T09:00:00Z")])
    merged = merge(both, again, {7}, {7})
    assert sorted(merged["verdict"]) == ["accept", "edit"] and len(merged) == 2


def test_rows_recorded_before_creation_times_in_ids_are_read_as_they_are():
    legacy = _item_rows([_annotation(1, [c("verdict", "accept")], "2026-01-01T10:00:00Z")])
    legacy = [{**r, "verdict_id": "2:1"} for r in legacy]  # as an older release recorded it
    prev = merge(pd.DataFrame(), legacy, {7}, {7})
    same = _item_rows([_annotation(1, [c("verdict", "reject"), c("reason", "other")], "2026-01-01T10:00:00Z")])
    read_again = merge(prev, same, {7}, {7})
    assert read_again["verdict"].tolist() == ["reject"]  # the same annotation: replaced, not doubled
    other = _item_rows([_annotation(1, [c("verdict", "reject"), c("reason", "other")], "2026-02-02T10:00:00Z")])
    kept = merge(prev, other, {7}, {7})
    assert sorted(kept["verdict_id"]) == ["2:1", "2:1@20260202T100000.000000Z"]  # another database's: both stay
    unit_legacy = [{**r, "verdict_id": "2:1:v1"} for r in legacy]  # a unit row of an older release
    assert len(merge(pd.DataFrame(unit_legacy), same, {7}, {7})) == 2  # another member part: not the same row


# -- a skip is something to read -------------------------------------------------------------------


def test_a_skip_is_unread_until_the_read_records_it():
    skip = _annotation(3, [], "2026-01-01T10:00:00Z", was_cancelled=True)
    by_kind = {"review": [(2, [_vague_task([skip])])]}
    assert read.unread(by_kind, pd.DataFrame()) == ["2:3@2026-01-01T10:00:00Z"]
    (row,) = _item_rows([skip])
    assert row["verdict"] == "refused" and row["refusal"].startswith("skipped: ")
    recorded = merge(pd.DataFrame(), [row], {7}, {7})
    assert read.unread(by_kind, recorded) == []
    # a replaced database's annotation 3 (another creation time) is not the recorded one
    reused = {"review": [(2, [_vague_task([_annotation(3, [c("verdict", "accept")], "2026-05-05T10:00:00Z")])])]}
    assert read.unread(reused, recorded) == ["2:3@2026-05-05T10:00:00Z"]
