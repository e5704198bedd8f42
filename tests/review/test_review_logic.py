"""The review rules without a server: annotation parsing, edits against the item contract,
status per item, export filter, agreement, the generated labeling configuration."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from forge.benchmarks.review_spec import FieldLimits, Media, ReviewPolicy, ReviewSpec
from forge.people.verdict_ids import annotation_ref
from forge.review import gate
from forge.review.items import apply_edits, revision
from forge.review.labelconfig import human_config, review_config
from forge.review.status import returned
from forge.review.verdicts import VERDICT_COLUMNS, merge, parse_annotation, verdict_rows
from tests.review import scripted as sr
from tests.review import world

REASONS = ReviewSpec().reasons


def test_annotation_parsing():
    assert parse_annotation(sr.ACCEPT, {}, REASONS)["verdict"] == "accept"
    assert parse_annotation(sr.reject("ambiguous"), {}, REASONS) == {
        "verdict": "reject",
        "reason": "ambiguous",
        "note": None,
        "edits": {},
        "refused": None,
    }
    noted = parse_annotation(
        [*sr.reject("other"), sr.text("reason_note", "the clip is a different scene")], {}, REASONS
    )
    assert noted["reason"] == "other" and noted["note"] == "the clip is a different scene"
    e = parse_annotation(sr.edit(options="one\n two \n"), {}, REASONS)
    assert e["verdict"] == "edit" and e["edits"] == {"options": ["one", "two"]} and e["refused"] is None
    boxes = {"0": [0.1, 0.2, 0.3, 0.4]}
    same = parse_annotation([sr.choice("verdict", "accept"), sr.box(0, 0.1, 0.2, 0.3, 0.4)], boxes, REASONS)
    assert same["verdict"] == "accept"
    moved = parse_annotation([sr.choice("verdict", "accept"), sr.box(0, 0.2, 0.2, 0.3, 0.4)], boxes, REASONS)
    assert moved["verdict"] == "edit" and moved["edits"]["boxes"] == {"0": [0.2, 0.2, 0.3, 0.4]}


LIMITS = FieldLimits(question=50, option=20, options=3, answer=10, reason_note=30)
# tests/review/test_review_verdicts.py posts the same annotations to a real server
MALFORMED = sr.malformed(LIMITS)


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_annotations_are_refused_with_their_reason(case):
    """Read or refused, never guessed (#49): the refusal names what was wrong, for people."""
    parsed = parse_annotation(MALFORMED[case], {"0": [0.1, 0.2, 0.3, 0.4]}, REASONS, LIMITS)
    assert parsed["verdict"] == "refused" and parsed["edits"] == {} and parsed["reason"] is None
    assert parsed["refused"].startswith(sr.REFUSAL.get(case, case) + ": "), parsed["refused"]
    assert len(parsed["refused"]) > len(sr.REFUSAL.get(case, case)) + 5  # an explanation follows the code


def test_limits_at_the_bound_are_read():
    ok = parse_annotation(sr.edit(question="q" * 50, answer="A" * 10, options="a\nb\n" + "o" * 20), {}, REASONS, LIMITS)
    assert ok["verdict"] == "edit" and ok["refused"] is None
    assert ok["edits"]["options"] == ["a", "b", "o" * 20]
    assert FieldLimits().options_chars() == 10 * 501
    with pytest.raises(ValueError, match="positive"):
        FieldLimits(question=0)


def _annotation(aid: int, result: list, completed_by: int, updated_by: int | None) -> dict:
    return {
        "id": aid,
        "result": result,
        "completed_by": {"id": completed_by, "email": f"u{completed_by}@t"},
        "updated_by": updated_by,
        "lead_time": 12.0,
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": f"2026-01-01T00:0{aid}:00Z",
    }


def test_the_reviewer_is_who_last_changed_the_annotation_and_an_overwrite_is_flagged(tmp_path):
    from forge.storage import TableStore

    items = world.maia(TableStore(tmp_path), n=1)
    rev = revision(items.to_dict("records")[0])
    users = {1: "u1@t", 2: "u2@t", 3: "u3@t"}
    task = {
        "id": 7,
        "data": {"item_id": "m1", "revision": rev},
        "annotations": [
            _annotation(1, sr.ACCEPT, 1, 1),  # u1's own accept
            _annotation(2, sr.ACCEPT, 2, 3),  # u2's annotation, last changed by u3
            _annotation(3, sr.ACCEPT, 3, None),  # no updated_by (imported): its author
        ],
    }
    rows = verdict_rows("maia", "review", 5, [task], users, REASONS)
    by = {annotation_ref(r["verdict_id"]): r for r in rows}  # the ids the tool shows
    assert (by["5:1"]["reviewer"], by["5:1"]["author"], by["5:1"]["flag"]) == ("u1@t", "u1@t", None)
    assert by["5:2"]["reviewer"] == "u3@t" and by["5:2"]["author"] == "u2@t"
    assert by["5:2"]["flag"] == "changed_by_other: u3@t changed the annotation u2@t made"
    assert by["5:3"]["reviewer"] == "u3@t" and by["5:3"]["flag"] is None
    res = gate.resolve(items, pd.DataFrame(rows, columns=VERDICT_COLUMNS), ReviewSpec(reviewers=3), tmp_path)
    assert res.status == {"m1": "pending"}  # u1 and u3 count; the overwritten one does not
    summary = gate.summary(res, ReviewSpec(reviewers=3), ReviewPolicy.REQUIRED)
    assert summary["verdicts"] == 2 and summary["verdicts_flagged"] == 1
    assert summary["flagged"] == ["m1: changed_by_other: u3@t changed the annotation u2@t made"]
    res2 = gate.resolve(items, pd.DataFrame(rows, columns=VERDICT_COLUMNS), ReviewSpec(reviewers=2), tmp_path)
    assert res2.status == {"m1": "accepted"}
    back = returned("maia", res.verdicts)
    assert back[["verdict_id", "reviewer", "author"]].values.tolist() == [
        ["5:2@20260101T000000.000000Z", "u3@t", "u2@t"]
    ]


def test_a_flagged_edit_is_never_applied(tmp_path):
    from forge.storage import TableStore

    items = world.maia(TableStore(tmp_path), n=1)
    rev = revision(items.to_dict("records")[0])
    edit = _v("m1", rev, "u3@t", "edit", edits=json.dumps({"question": "Taken over?"}), flag="changed_by_other: x")
    res = gate.resolve(items, pd.DataFrame([edit], columns=VERDICT_COLUMNS), ReviewSpec(), tmp_path)
    assert res.items["question"].iloc[0] == items["question"].iloc[0] and res.status == {"m1": "pending"}
    assert res.verdicts["edit_status"].isna().all()


def test_edits_that_break_the_contract_are_refused(tmp_path):
    from forge.storage import TableStore

    store = TableStore(tmp_path)
    item = world.hummus(store).to_dict("records")[0]
    mcq = world.maia(store, n=1).to_dict("records")[0]
    new, why = apply_edits(mcq, {"question": "   "}, tmp_path)
    assert new is None and why.startswith("empty_question")
    new, why = apply_edits(mcq, {"answer": "C"}, tmp_path)  # two options only
    assert new is None and "outside 2 options" in why
    new, why = apply_edits(mcq, {"options": ["a", "b", "c"]}, tmp_path)
    assert new is None and why.startswith("option_count")
    new, why = apply_edits(item, {"boxes": {"0": [0.9, 0.5, 0.3, 0.2]}}, tmp_path)
    assert new is None and "outside the image" in why
    new, why = apply_edits(item, {"boxes": {"0": [0.5, 0.5, 0.25, 0.25]}}, tmp_path)
    assert why == "" and new["answer"] == "chains: [0.500, 0.500, 0.250, 0.250]"
    assert json.loads(new["labels"])["boxes"][0]["box_norm_tlhw"] == [0.5, 0.5, 0.25, 0.25]
    assert revision(new) != revision(item)


def _v(item: str, rev: str, reviewer: str, verdict: str, kind: str = "review", n: int = 0, **kw) -> dict:
    row = dict.fromkeys(VERDICT_COLUMNS)
    row.update(
        verdict_id=f"1:{item}{reviewer}{n}",
        benchmark="maia",
        item_id=item,
        revision=rev,
        project_kind=kind,
        project_id=1,
        task_id=1,
        reviewer=reviewer,
        verdict=verdict,
        stale=False,
        created_at=pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(minutes=n),
        updated_at=pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(minutes=n),
        **kw,
    )
    return row


@pytest.mark.parametrize(
    ("verdicts", "required", "status"),
    [
        ([], 2, "pending"),
        ([], 0, "accepted"),  # nothing required: accepted with no verdict
        ([("a", "accept")], 2, "pending"),
        ([("a", "accept"), ("b", "accept")], 2, "accepted"),
        ([("a", "accept"), ("a", "accept")], 2, "pending"),  # one reviewer counts once
        ([("a", "reject")], 1, "rejected"),
        ([("a", "reject")], 2, "pending"),
        ([("a", "reject"), ("b", "reject")], 2, "rejected"),
        ([("a", "accept"), ("b", "reject")], 2, "disputed"),
        ([("a", "accept"), ("a", "reject")], 1, "rejected"),  # a reviewer's latest verdict counts
    ],
)
def test_item_status(verdicts, required, status):
    rows = [
        _v("m1", "r", who, what, n=i, reason="ambiguous" if what == "reject" else None)
        for i, (who, what) in enumerate(verdicts)
    ]
    g = pd.DataFrame(rows, columns=VERDICT_COLUMNS)
    g["edit_status"] = None
    assert gate.item_status(g, "r", required)[0] == status


def test_adjudication_is_final_and_policy_filters_the_export(tmp_path):
    from forge.storage import TableStore

    items = world.maia(TableStore(tmp_path), n=3)
    revs = {r["item_id"]: revision(r) for r in items.to_dict("records")}
    rows = [
        _v("m1", revs["m1"], "a", "accept", n=1),
        _v("m1", revs["m1"], "b", "reject", n=2, reason="ambiguous"),
        _v("m1", revs["m1"], "c", "accept", kind="adjudication", n=3),
        _v("m2", revs["m2"], "a", "reject", n=4, reason="wrong_gold"),
        _v("m3", "old-revision", "a", "accept", n=5),  # made on content that changed since
    ]
    spec = ReviewSpec(reviewers=1)
    res = gate.resolve(items, pd.DataFrame(rows, columns=VERDICT_COLUMNS), spec, tmp_path)
    assert res.status == {"m1": "accepted", "m2": "rejected", "m3": "pending"}
    assert res.reasons == {"m2": "wrong_gold"}
    assert res.verdicts.loc[res.verdicts.item_id == "m3", "stale_reason"].tolist() == ["item_changed"]
    kept, out = gate.export_filter(res, ReviewPolicy.REQUIRED)
    assert kept.item_id.tolist() == ["m1"] and out == {"rejected": ["m2"], "held_back": ["m3"]}
    kept, _ = gate.export_filter(res, ReviewPolicy.ADVISORY)
    assert kept.item_id.tolist() == ["m1", "m3"]
    assert gate.coverage(res)["reviewed"] == 2
    only_test = gate.resolve(
        items.assign(split=["dev", "test", "test"]), res.verdicts, ReviewSpec(splits=("test",)), tmp_path
    )
    assert only_test.status["m1"] == "not_required"


def test_a_unit_goes_out_whole_or_not_at_all(tmp_path):
    """MAIA's unit (SplitPolicy.unit_key = question_id): a pool with one rejected pair is held back
    whole; a pool whose review is half done is held back whole; a fully accepted pool goes out."""
    from forge.storage import TableStore

    items = world.maia(TableStore(tmp_path), n=6)
    pools = {"m1": "qA", "m2": "qA", "m3": "qB", "m4": "qB", "m5": "qC", "m6": "qC"}
    items["labels"] = [json.dumps({"question_id": pools[i]}) for i in items["item_id"]]
    revs = {r["item_id"]: revision(r) for r in items.to_dict("records")}
    verdicts = {"m1": "accept", "m2": "reject", "m3": "accept", "m5": "accept", "m6": "accept"}  # m4 pending
    rows = [
        _v(i, revs[i], "a", what, n=k, reason="wrong_gold" if what == "reject" else None)
        for k, (i, what) in enumerate(verdicts.items())
    ]
    res = gate.resolve(items, pd.DataFrame(rows, columns=VERDICT_COLUMNS), ReviewSpec(reviewers=1), tmp_path)
    kept, out = gate.export_filter(res, ReviewPolicy.REQUIRED, "question_id")
    assert kept.item_id.tolist() == ["m5", "m6"]
    assert out == {"rejected": ["m2"], "held_back": ["m1", "m3", "m4"]}
    kept, out = gate.export_filter(res, ReviewPolicy.ADVISORY, "question_id")  # a rejected pair still takes its pool
    assert kept.item_id.tolist() == ["m3", "m4", "m5", "m6"] and out["held_back"] == ["m1"]
    kept, _ = gate.export_filter(res, ReviewPolicy.REQUIRED)  # no unit: item by item, as before
    assert kept.item_id.tolist() == ["m1", "m3", "m5", "m6"]


def test_merge_never_duplicates_and_keeps_deleted_tasks_verdicts():
    a = _v("m1", "r", "a", "accept")
    b = {**_v("m2", "r", "a", "accept"), "task_id": 2}
    first = merge(pd.DataFrame(columns=VERDICT_COLUMNS), [a, b], live_tasks={1, 2}, pushed={1, 2})
    again = merge(first, [a, b], live_tasks={1, 2}, pushed={1, 2})
    assert len(again) == 2 and again.verdict_id.is_unique
    gone = merge(again, [a], live_tasks={1}, pushed={1, 2})  # task 2 deleted in the tool
    assert len(gone) == 2 and gone.set_index("item_id").loc["m2", "stale_reason"] == "task_deleted"
    replaced = merge(again, [a], live_tasks={1}, pushed={1})  # task 2 replaced by the push itself
    assert replaced.set_index("item_id").loc["m2", "stale_reason"] is None


def test_label_configs_are_xml_with_the_declared_controls():
    spec = ReviewSpec(media=Media.VIDEO, boxes=True, editable=("question", "answer", "box"), reasons=("a", "b"))
    root = ET.fromstring(review_config(spec))
    names = {e.get("name") for e in root.iter() if e.get("name")}
    assert {"video", "image", "box", "question", "verdict", "reason", "corrected_question", "corrected_answer"} <= names
    assert "corrected_options" not in names
    assert [c.get("value") for c in root.iter("Choice") if c.get("value") in ("a", "b")] == ["a", "b"]
    adj = ET.fromstring(review_config(spec, adjudication=True))
    assert any(e.get("name") == "prior" for e in adj.iter())
    blind = ET.fromstring(human_config(ReviewSpec(), max_options=4))
    assert [c.get("value") for c in blind.iter("Choice")] == ["A", "B", "C", "D"]
    assert not any(e.get("name") == "answer" for e in blind.iter())  # no gold


@pytest.mark.parametrize("action", ["report", "drop"])
def test_an_edited_revision_re_enters_the_text_only_probe(tmp_path, llm_double, llm_double_resource, action):
    """The edit passes the field contract, then the gates' probe asks the blind solver about the new
    text; its figures land on the revision (report) or a flagged edit is refused (opt-in drop)."""
    from forge.benchmarks import registry
    from forge.gates.stages import BLIND_PROMPT
    from forge.review.reprobe import Reprobe, reprobe
    from forge.splits.config import stage_settings
    from forge.storage import TableStore
    from tests.llm_double.server import message_text

    llm_double.responder = lambda body: {"answer": "A" if "leave" in message_text(body) else "B"}
    items = world.maia(TableStore(tmp_path), n=2)
    m1 = items.to_dict("records")[0]
    edit = _v("m1", revision(m1), "r1", "edit", edits=json.dumps({"question": "Why does the person leave?"}))
    spec = ReviewSpec(reviewers=1)
    res = gate.resolve(items, pd.DataFrame([edit]), spec, tmp_path)
    assert res.verdicts["edit_status"].tolist() == ["applied"]
    settings = stage_settings(registry.get("maia")).with_blind_action(action)
    how = Reprobe(settings, llm_double_resource().engine, BLIND_PROMPT)
    probed, engine = reprobe(res.items, res.verdicts, how, "maia_review_results", "maia")
    asked = [message_text(b) for b in llm_double.chat_requests]
    assert engine is not None and len(asked) >= 4
    assert all("Why does the person leave?" in t for t in asked)  # only the edited item was asked
    again = gate.resolve(items, probed, spec, tmp_path)
    row = again.items.set_index("item_id").loc["m1"]
    if action == "report":
        assert row["question"] == "Why does the person leave?" and row["blind_trials"] >= 4
        assert bool(row["blind_flagged"]) and again.verdicts["edit_status"].tolist() == ["applied"]
    else:
        assert row["question"] == m1["question"]  # the original stays
        assert again.verdicts["edit_status"].tolist() == ["refused"]
        assert again.verdicts["edit_note"].iloc[0].startswith("blind_flagged")


def test_the_reader_knows_every_control_of_the_review_forms():
    """The forms (labelconfig) and the reader (verdicts.CONTROLS) name the same controls with the
    result type Label Studio gives each and the object each is about (``toName``), so no answer a
    form can give is refused as unknown."""
    from forge.review.verdicts import CONTROLS

    types = {"Choices": "choices", "TextArea": "textarea", "RectangleLabels": "rectanglelabels"}
    spec = ReviewSpec(media=Media.VIDEO, boxes=True, editable=("question", "options", "answer", "box"))
    for adjudication in (False, True):
        root = ET.fromstring(review_config(spec, adjudication=adjudication))
        controls = {e.get("name"): (types[e.tag], e.get("toName")) for e in root.iter() if e.get("toName")}
        assert controls == CONTROLS


def test_review_status_rows_and_the_one_minutes_figure(tmp_path):
    """One row per item and revision (an edited item's old revision is superseded, an item no longer
    gated stays with its verdicts); the docs' query over review_status gives gate.reviewer_minutes."""
    from forge.review.status import review_status
    from forge.storage import TableStore, open_catalog, refresh_catalog
    from forge.storage.contracts import load_contract

    store = TableStore(tmp_path)
    items = world.maia(store, n=4)
    revs = {r["item_id"]: revision(r) for r in items.to_dict("records")}
    rows = [
        _v("m1", revs["m1"], "a", "accept", n=1, seconds=60.0),
        _v("m1", revs["m1"], "b", "accept", n=2, seconds=30.0),
        _v("m2", revs["m2"], "a", "reject", n=3, reason="ambiguous", note="two readings", seconds=45.0),
        _v("m3", revs["m3"], "a", "edit", n=4, edits=json.dumps({"question": "Why does m3 leave?"}), seconds=90.0),
        _v("m4", revs["m4"], "a", "refused", n=5, refusal="no_reason: no reason chosen", seconds=15.0),
        _v("m9", "gone-revision", "a", "accept", n=6, seconds=20.0),  # an item that left the gated items
    ]
    spec = ReviewSpec(reviewers=2)
    res = gate.resolve(items, pd.DataFrame(rows, columns=VERDICT_COLUMNS), spec, tmp_path)
    st = review_status("maia", res, ReviewPolicy.REQUIRED)
    key = {(r.item_id, r.current): r for r in st.itertuples()}
    assert key[("m1", True)].status == "accepted" and key[("m1", True)].export == "kept"
    assert list(key[("m1", True)].accepted_by) == ["a", "b"] and key[("m1", True)].minutes == 1.5
    assert key[("m2", True)].status == "pending" and key[("m2", True)].reasons == "a: reject (ambiguous: two readings)"
    assert key[("m3", True)].status == "pending" and key[("m3", True)].accepted_by == ["a"]  # the editor's accept
    assert key[("m3", False)].status == "superseded" and key[("m3", False)].minutes == 1.5
    assert key[("m4", True)].status == "refused" and "no_reason" in key[("m4", True)].reasons
    assert key[("m4", True)].export == "held_back" and key[("m9", False)].status == "not_gated"
    assert len(st) == 6 and st["minutes"].sum() * 60 == pytest.approx(260.0)
    c = load_contract("review_status")
    store.write("review_status", c.conform(st), "maia", schema=c.arrow_schema())
    refresh_catalog(store)
    with open_catalog(store) as con:
        (row,) = con.sql(sr.docs_minutes_query()).df().itertuples()
    want = gate.reviewer_minutes(res)
    assert row.items_accepted == 1 and row.reviewer_minutes == want["reviewer_minutes"] == 4.33
    assert row.minutes_per_accepted_item == want["reviewer_minutes_per_accepted_item"] == 4.333
