"""Verdict integrity on a real Label Studio: reviewers signed up through the invite link work in
their own browser sessions (the labeling stream, POST and PATCH as the browser sends them), so
Label Studio itself records who made and who last changed each annotation. One person, one
verdict; an overwrite is flagged and not counted; every malformed annotation the API accepts is
refused with its reason and nothing of it is exported; ``review_status`` and the one definition
of reviewer minutes (card, metadata and docs/review.md's query agree)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from forge.benchmarks.registry import get
from forge.benchmarks.review_settings import review_spec
from forge.export.stages import run_export
from forge.people.verdict_ids import annotation_ref
from forge.review.items import revision
from forge.review.stages import resolution
from forge.review.status import returned
from forge.splits.config import stage_settings
from forge.storage import TableStore
from tests.review import scripted as sr
from tests.review import world
from tests.review.test_review_flow import _export_lines, check, materialize, q

pytestmark = pytest.mark.slow  # a real Label Studio server (shared by the session's review tests)


def _review_project(data) -> int:
    return int(q(data, "select project_id from review_tasks where kind = 'review' limit 1").project_id.iloc[0])


def test_two_reviewers_each_own_verdict_and_an_overwrite_is_flagged(review_env):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  maia: {reviewers: 2}\n")
    store = TableStore(data)
    world.maia(store, n=2)
    materialize(data, ["maia_review_tasks"])
    pid = _review_project(data)
    project = ls.request("GET", f"/api/projects/{pid}")
    assert (project["maximum_annotations"], project["overlap_cohort_percentage"]) == (2, 100)
    assert project["sampling"] == "Sequential sampling" and project["enable_empty_annotation"] is False
    assert {t["overlap"] for t in ls.tasks(pid)} == {2}  # imported tasks take the project's overlap
    old = ls.tasks(pid)[0]  # a task an older release made with POST /api/tasks had overlap 1
    ls.request("PATCH", f"/api/tasks/{old['id']}", json={"overlap": 1})
    materialize(data, ["maia_review_tasks"])
    assert {t["overlap"] for t in ls.tasks(pid)} == {2}  # the push re-applies it

    alice, bob, carol = (sr.reviewer(ls, f"{n}@team.test") for n in ("alice", "bob", "carol"))
    first_a, first_b = sr.open_next(alice, pid), sr.open_next(bob, pid)
    assert first_a["id"] == first_b["id"]  # overlap 2: both are given the same task
    a1 = sr.annotate(alice, first_a, sr.ACCEPT, 40)
    b1 = sr.annotate(bob, first_b, sr.ACCEPT, 20)
    assert sr.open_next(alice, pid)["id"] != first_a["id"]  # the next task she has not done
    item = first_a["data"]["item_id"]

    materialize(data, ["maia_review_results"])
    v = _by_annotation(q(data, "select * from verdicts"))
    for ann, who in ((a1, alice), (b1, bob)):
        row = v.loc[f"{pid}:{ann['id']}"]
        assert (row.reviewer, row.author, row.verdict) == (who.email, who.email, "accept") and row.flag is None
    st = q(data, f"select * from review_status where item_id = '{item}' and current").iloc[0]
    assert st.status == "accepted" and list(st.accepted_by) == ["alice@team.test", "bob@team.test"]
    assert st.export == "kept" and st.minutes == pytest.approx(1.0)

    # carol opens the task from the data manager: it shows the latest annotation (bob's) and
    # Submit becomes Update, so her verdict replaces his
    opened = carol.client.request("GET", f"/api/tasks/{first_a['id']}")
    latest = max(opened["annotations"], key=lambda a: a["id"])
    assert latest["id"] == b1["id"]
    sr.update(carol, latest, sr.reject("ambiguous"))
    res = materialize(data, ["maia_review_results"])
    row = _by_annotation(q(data, "select * from verdicts")).loc[f"{pid}:{b1['id']}"]
    assert (row.reviewer, row.author, row.verdict) == ("carol@team.test", "bob@team.test", "reject")
    flag = "changed_by_other: carol@team.test changed the annotation bob@team.test made"
    assert row.flag == flag
    st = q(data, f"select * from review_status where item_id = '{item}' and current").iloc[0]
    assert st.status == "refused" and list(st.accepted_by) == ["alice@team.test"] and list(st.rejected_by) == []
    assert f"carol@team.test: not counted ({flag})" in st.reasons and st.export == "held_back"
    md = res.asset_materializations_for_node("maia_review_results")[0].metadata
    assert md["verdicts_flagged"].value == 1 and md["flagged"].value == [f"{item}: {flag}"]
    cov = check(res, "review_coverage")
    assert cov.metadata["flagged"].value == [f"{item}: {flag}"] and cov.metadata["accepted"].value == 0
    back = returned("maia", resolution(store, get("maia"), review_spec("maia", get("maia").review)).verdicts)
    assert back[["reviewer", "author", "why"]].values.tolist() == [["carol@team.test", "bob@team.test", flag]]

    # bob opens his own annotation and submits it again: it is his once more, and counts
    sr.update(bob, latest, sr.ACCEPT, 5)
    res = materialize(data, ["maia_review_results"])
    row = _by_annotation(q(data, "select * from verdicts")).loc[f"{pid}:{b1['id']}"]
    assert (row.reviewer, row.flag, row.verdict) == ("bob@team.test", None, "accept")
    st = q(data, f"select * from review_status where item_id = '{item}' and current").iloc[0]
    assert st.status == "accepted" and st.reasons is None

    # one figure of reviewer minutes per accepted item: metadata, card and the docs' query
    md = res.asset_materializations_for_node("maia_review_results")[0].metadata
    (by_sql,) = q(data, sr.docs_minutes_query()).itertuples()
    assert by_sql.items_accepted == md["accepted"].value == 1
    assert by_sql.minutes_per_accepted_item == md["reviewer_minutes_per_accepted_item"].value
    spec = get("maia")
    run_export(store, spec, stage_settings(spec), force_stub=False)
    card = next((data / "exports" / "maia").glob("v*/README.md")).read_text()
    line = next(x for x in card.splitlines() if x.startswith("| reviewer minutes per accepted item"))
    assert f"| {by_sql.minutes_per_accepted_item} (" in line  # (40 + 5) s / 60 on one accepted item
    assert "| verdicts not counted (refused / changed by another) | 0 / 0 |" in card
    assert by_sql.minutes_per_accepted_item == pytest.approx(45 / 60, abs=1e-3)


def test_malformed_annotations_are_refused_with_their_reason_and_nothing_is_exported(review_env):
    """Each annotation Label Studio's API accepts (HTTP 201) but the review cannot read exactly is
    refused with its reason (``verdicts.refusal``, ``review_status.reasons``, the returned list),
    never counted, and never exported: the exported items are the originals."""
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: advisory}\nbenchmarks:\n  maia: {reviewers: 1}\n")
    rs = review_spec("maia", get("maia").review)
    cases = sr.malformed(rs.limits)
    cases["question_too_long"] = sr.edit(question="q" * 2**20)  # the 1 MiB question of the fault run
    cases["breaks_contract"] = sr.edit(answer="C")  # readable, but MAIA items have two options
    store = TableStore(data)
    items = world.maia(store, n=len(cases) + 1)
    originals = {r["item_id"]: r for r in items.to_dict("records")}
    materialize(data, ["maia_review_tasks"])
    pid = _review_project(data)
    by_item = {t["data"]["item_id"]: t for t in ls.tasks(pid)}
    alice = sr.reviewer(ls, "alice@team.test")
    posted = {}
    for (case, result), item_id in zip(sorted(cases.items()), sorted(by_item), strict=False):
        posted[item_id] = (case, sr.annotate(alice, by_item[item_id], result, 12))  # HTTP 201: the tool accepts it
    fine = sorted(set(by_item) - set(posted))
    assert len(fine) == 1
    sr.annotate(alice, by_item[fine[0]], sr.ACCEPT, 12)

    res = materialize(data, ["maia_review_results"])
    v = q(data, "select * from verdicts").set_index("item_id")
    status = q(data, "select * from review_status where current").set_index("item_id")
    for item_id, (case, ann) in posted.items():
        row, st = v.loc[item_id], status.loc[item_id]
        assert annotation_ref(row.verdict_id) == f"{pid}:{ann['id']}" and row.reviewer == "alice@team.test"
        if case == "breaks_contract":
            assert (row.verdict, row.edit_status) == ("edit", "refused") and "outside 2 options" in row.edit_note
            why = row.edit_note
        else:
            code = sr.REFUSAL.get(case, case)
            assert row.verdict == "refused" and row.refusal.startswith(f"{code}: "), (case, row.refusal)
            assert pd.isna(row.edits) and pd.isna(row.reason)
            why = row.refusal
        assert st.status == "refused" and why in st.reasons and list(st.accepted_by) == [], case
    assert max(len(str(x)) for x in v.to_numpy().ravel()) < 10_000  # the 1 MiB text is kept nowhere
    assert status.loc[fine[0], "status"] == "accepted"
    md = res.asset_materializations_for_node("maia_review_results")[0].metadata
    assert md["verdicts_refused"].value == len(cases) and md["accepted"].value == 1
    back = returned("maia", resolution(store, get("maia"), rs).verdicts)
    assert set(back["item_id"]) == set(posted) and back["why"].str.len().gt(10).all()

    # advisory exports every item, each as it was: nothing of a refused annotation reaches it
    spec = get("maia")
    run_export(store, spec, stage_settings(spec), force_stub=False)
    exported = {json.loads(line)["item_id"]: json.loads(line) for line in _export_lines(data, "maia")}
    assert set(exported) == set(originals)
    card = next((data / "exports" / "maia").glob("v*/README.md")).read_text()
    assert f"| verdicts not counted (refused / changed by another) | {len(cases)} / 0 |" in card
    for item_id, row in exported.items():
        assert row["question"] == originals[item_id]["question"] and row["answer"] == originals[item_id]["answer"]
        assert list(row["options"]) == list(originals[item_id]["options"])
    gated = {r["item_id"]: revision(r) for r in items.to_dict("records")}
    assert set(q(data, "select revision from review_status where current").revision) == set(gated.values())


def _by_annotation(v: pd.DataFrame) -> pd.DataFrame:
    """Verdict rows by the ids the tool shows (``<project>:<annotation>``; the row's id adds its
    creation time, ``forge/people/verdict_ids.py``)."""
    return v.set_index(v["verdict_id"].map(annotation_ref))
