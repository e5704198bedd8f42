"""Hostile and invisible edits on a real Label Studio (issue #55, points 4 and 5): each is accepted
by the tool's API (HTTP 201), refused by the reader with its reason, returned to its reviewer,
and none of it reaches the VAGUE export (where the fault run found them all). An answer about an
object the form does not have (an unknown ``to_name``) and a skip are refused with theirs too."""

from __future__ import annotations

import json

import dagster as dg
import pandas as pd
import pytest

from assets.people.factory import people_defs
from forge.benchmarks.registry import get
from forge.benchmarks.review_settings import review_spec
from forge.export.stages import run_export
from forge.people.verdict_ids import annotation_ref
from forge.review.stages import resolution
from forge.review.status import returned
from forge.splits.config import stage_settings
from forge.storage import TableStore
from tests.review import scripted as sr
from tests.review import world
from tests.review.test_review_flow import _export_lines, _resources, q

pytestmark = pytest.mark.slow  # a real Label Studio server (shared by the session's review tests)

HOSTILE = {  # case → (annotation result, the refusal code it must get)
    "zero_width_only": (sr.edit(question="\u200b\u200c\u200d\u2060\ufeff"), "invisible_only"),
    "nul": (sr.edit(question="Why is the floor wet?\x00"), "control_character"),
    "escape": (sr.edit(answer="\x1b[31mB\x1b[0m"), "control_character"),
    "rtl_override": (sr.edit(question="What does the speaker \u202etnaw\u202c?"), "bidi_control"),
    "script": (sr.edit(question="<script>alert(1)</script> What is meant?"), "markup"),
    "onerror": (sr.edit(options="Mop\n<img src=x onerror=alert(1)>\nSing\nHat"), "markup"),
    "unknown_to_name": ([{**sr.choice("verdict", "accept"), "to_name": "nowhere"}], "unknown_target"),
}
LEAKS = ("\u200b", "\u2060", "\ufeff", "\x00", "\x1b", "\u202e", "<script", "onerror", "<img", "tnaw")


def _mat(data, keys: list[str]) -> dg.ExecuteInProcessResult:
    return dg.materialize(list(people_defs("vague", "review").assets), selection=keys, resources=_resources(data))


def test_hostile_edits_a_skip_and_an_unknown_target_are_refused_and_never_exported(review_env):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: advisory}\nbenchmarks:\n  vague: {reviewers: 1}\n")
    store = TableStore(data)
    items = world.vague(store, n=len(HOSTILE) + 1)
    originals = {r["item_id"]: r for r in items.to_dict("records")}
    _mat(data, ["vague_review_tasks"])
    pid = int(q(data, "select project_id from review_tasks where kind = 'review' limit 1").project_id.iloc[0])
    by_item = {t["data"]["item_id"]: t for t in ls.tasks(pid)}
    alice = sr.reviewer(ls, "alice@team.test")
    posted = {}
    ids = sorted(by_item)
    for (case, (result, code)), item_id in zip(sorted(HOSTILE.items()), ids, strict=False):
        posted[item_id] = (case, code, sr.annotate(alice, by_item[item_id], result, 12))  # HTTP 201
    skipped = ids[-1]  # Label Studio's Skip: an annotation with was_cancelled and no result
    task = by_item[skipped]
    body = {"result": [], "was_cancelled": True, "lead_time": 3, "project": pid}
    ann = alice.client.request("POST", f"/api/tasks/{task['id']}/annotations?project={pid}", json=body)
    assert ann["was_cancelled"] is True
    posted[skipped] = ("skip", "skipped", ann)

    res = _mat(data, ["vague_review_results"])
    v = q(data, "select * from verdicts").set_index("item_id")
    status = q(data, "select * from review_status where current").set_index("item_id")
    assert set(v.index) == set(posted)  # every annotation has its row, the skip included
    for item_id, (case, code, a) in posted.items():
        row, st = v.loc[item_id], status.loc[item_id]
        assert annotation_ref(row.verdict_id) == f"{pid}:{a['id']}" and row.reviewer == "alice@team.test", case
        assert row.verdict == "refused" and row.refusal.startswith(f"{code}: "), (case, row.refusal)
        assert pd.isna(row.edits) and st.status == "refused" and row.refusal in st.reasons, case
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in v.loc[posted_by(posted, "rtl_override")].refusal
    assert (
        "U+0000" in v.loc[posted_by(posted, "nul")].refusal
        and "U+200B" in v.loc[posted_by(posted, "zero_width_only")].refusal
    )
    md = res.asset_materializations_for_node("vague_review_results")[0].metadata
    assert md["verdicts_refused"].value == len(posted) and md["accepted"].value == 0
    rs = review_spec("vague", get("vague").review)
    back = returned("vague", resolution(store, get("vague"), rs).verdicts)  # each goes back to alice
    assert set(back["item_id"]) == set(posted) and set(back["reviewer"]) == {"alice@team.test"}

    # advisory exports every item as it was: nothing of a refused edit reaches it
    spec = get("vague")
    run_export(store, spec, stage_settings(spec), force_stub=False)
    lines = _export_lines(data, "vague")
    text = "\n".join(lines) + "".join(p.read_text() for p in (data / "exports" / "vague").rglob("*.md"))
    assert not [s for s in LEAKS if s in text or json.dumps(s)[1:-1] in text]
    exported = {json.loads(line)["item_id"]: json.loads(line) for line in lines}
    assert set(exported) == set(originals)
    for item_id, row in exported.items():
        assert row["question"] == originals[item_id]["question"] and row["answer"] == originals[item_id]["answer"]
        assert list(row["options"]) == list(originals[item_id]["options"])


def posted_by(posted: dict, case: str) -> str:
    return next(item for item, (c, _code, _a) in posted.items() if c == case)
