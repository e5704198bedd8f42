"""A reviewer's corrected MAIA answer rebuilds its pair (issue #54; assets/recipes/maia/logic/corrections.py):
the corrected answer passes the answer stage's consistency check, statement j is regenerated from it,
then foil j (minimal edit, NLI, structural judge), through the LLM double on 127.0.0.1; the other 7
pairs of the pool and every other pool stay byte-identical, and the pool is exported once a person
accepts the rebuilt pair (its revision is new)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from forge.benchmarks import registry
from forge.review import stages
from forge.review.items import revision
from forge.review.verdicts import VERDICT_COLUMNS
from forge.splits.config import stage_settings
from forge.storage import TableStore
from forge.storage.contracts import load_contract
from tests.llm_double import Reply
from tests.recipes.maia.test_maia_assets import ALL, CHEF, Q_CHEF, corpus, materialize, responder  # noqa: F401
from tests.review import world
from tests.review.test_review_logic import _v

J = 2  # the corrected answer (a member no rephrase touched: CHEF[2])
FIXED = "Kneading dough upstairs, somewhere quiet."


def _qid(items: pd.DataFrame, question: str) -> str:
    oe = items[(items["task"] == "open_ended") & (items["question"] == question)]
    return str(json.loads(oe.iloc[0]["labels"])["question_id"])


def _of(items: pd.DataFrame, qid: str) -> pd.DataFrame:
    return items[items["labels"].map(lambda v: json.loads(v)["question_id"] == qid)]


def _pair(items: pd.DataFrame, qid: str, j: int) -> dict:
    sv = _of(items, qid)
    return sv[sv["labels"].map(lambda v: json.loads(v).get("pool_index") == j)].iloc[0].to_dict()


def _stable(df: pd.DataFrame) -> list[str]:
    """Each row as JSON text (every column): byte-identical rows give identical strings."""
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in df.to_dict("records"))


def _gate(store: TableStore) -> pd.DataFrame:
    items = store.read("maia_items")
    rows = items.assign(split="test", group_id=items["unit_id"], reshuffled=False, lineage=None)
    return world.write_gated(store, "maia", rows.to_dict("records"))


def _record(store: TableStore, rows: list[dict]) -> None:
    """The verdicts as ``maia_review_results`` records them (the gate's edit_status / new_revision kept)."""
    spec = registry.get("maia")
    c = load_contract("verdicts")
    df = pd.DataFrame(rows, columns=VERDICT_COLUMNS)
    df["polled_at"] = df["polled_at"].fillna(pd.Timestamp("2026-01-02", tz="UTC"))
    df["seconds"] = df["seconds"].fillna(4.0)
    store.write("verdicts", c.conform(df), "maia", schema=c.arrow_schema())
    out = stages.run_verdicts(store, spec, stage_settings(spec).review_settings(), None)
    store.write("verdicts", c.conform(out.frame("verdicts")), "maia", schema=c.arrow_schema())


def _paid(store: TableStore, stage: str) -> set[str]:
    calls = store.read("llm_calls")
    calls = calls[(calls["stage"] == stage) & ~calls["cache_hit"].astype(bool)]
    return set(calls["item_id"].astype(str))


@pytest.fixture
def required(monkeypatch, tmp_path):
    cfg = tmp_path / "review.yaml"
    cfg.write_text("benchmarks:\n  maia: {policy: required, reviewers: 1, splits: [test]}\n")
    monkeypatch.setenv("SUBTEXT_REVIEW_CONFIG", str(cfg))
    monkeypatch.setenv("SUBTEXT_REVIEW_POLICY", "required")  # the suite's default is advisory (tests/conftest.py)


def test_a_corrected_answer_rebuilds_its_pair_and_leaves_the_other_seven(
    corpus, llm_double, llm_double_resource, required
):
    llm_double.responder = responder
    store, llm = corpus, llm_double_resource()
    materialize(store, llm, ALL)
    before = store.read("maia_items")
    qid = _qid(before, Q_CHEF)
    assert len(_of(before, qid)) == 9, "the test needs a full pool: 8 pairs and the open question"
    gated = _gate(store)
    revs = {r["item_id"]: revision(r) for r in gated.to_dict("records")}
    oe = str(_of(before, qid).query("task == 'open_ended'").iloc[0]["item_id"])
    assert list(_of(before, qid).query("task == 'open_ended'").iloc[0]["references"])[J] == CHEF[J]
    old_pair = _pair(before, qid, J)
    # the reviewer corrects answer J of the pool (the unit task's part p_edit_J) and accepts the rest
    rows = [_v(oe, revs[oe], "r1", "edit", n=1, edits=json.dumps({"references": {str(J): FIXED}}))]
    rows += [_v(i, revs[i], "r1", "accept", n=n) for n, i in enumerate(sorted(set(revs) - {oe}), 2)]
    _record(store, rows)

    materialize(store, llm, ALL)  # what `cli.build --select maia_answer_pools+` runs after the review
    # a stage's calls are those of its last run: what was not in the cache is what the correction asked
    assert _paid(store, "maia_answer_pools") == {f"{qid}_a{J}"}  # the corrected answer's consistency check
    assert _paid(store, "maia_statements") == {f"{qid}_s{J}"}  # statement J alone is regenerated
    assert _paid(store, "maia_foils") == {f"{qid}_s{J}"} and _paid(store, "maia_foils_nli")  # its foil, NLI-tested
    assert _paid(store, "maia_questions") == set()
    answers = store.read("maia_answer_pools").set_index("answer_id")
    a = answers.loc[f"{qid}_a{J}"]
    assert (a["answer"], a["origin"], a["corrected_from"], a["consistency"]) == (FIXED, "reviewer", CHEF[J], 1)
    assert a["review"] is None and answers.drop(index=f"{qid}_a{J}")["corrected_from"].isna().all()

    after = store.read("maia_items")
    pair = _pair(after, qid, J)
    statement = [o for o, t in zip(pair["options"], pair["option_types"], strict=True) if t == "correct"][0]
    foil = [o for o, t in zip(pair["options"], pair["option_types"], strict=True) if t == "foil"][0]
    assert statement == FIXED and foil == "Kneading dough upstairs, somewhere elsewhere"
    assert set(pair["options"]) != set(old_pair["options"]) and json.loads(pair["extra"])["review"] is None
    others = after[after["item_id"] != pair["item_id"]]
    others_before = before[before["item_id"] != pair["item_id"]]
    sv = "task == 'statement_verification'"
    assert _stable(others.query(sv)) == _stable(others_before.query(sv))  # the other 7 pairs, every pool's
    assert _stable(after[~after["item_id"].isin([oe])].query("task == 'open_ended'")) == _stable(
        before[~before["item_id"].isin([oe])].query("task == 'open_ended'")
    )

    # the open question now holds the correction as built (the edit stays applied); pair J is a new
    # revision the reviewer has not seen: pending, so the pool is held back until it is accepted
    gated = _gate(store)
    spec = registry.get("maia")
    rs = stage_settings(spec).review_settings()
    res = stages.resolution(store, spec, rs, gated)
    assert res.status[oe] == "accepted" and res.status[pair["item_id"]] == "pending"
    kept, _ = stages.export_gate(store, spec, rs, gated)
    assert _of(kept, qid).empty  # the pool goes out whole or not at all
    _record(
        store,
        [*store.read("verdicts", parts=["maia"]).to_dict("records")]
        + [_v(pair["item_id"], revision(_pair(gated, qid, J)), "r1", "accept", n=99)],
    )
    kept, _ = stages.export_gate(store, spec, rs, gated)
    exported = _pair(kept, qid, J)
    assert sorted(exported["options"]) == sorted([FIXED, foil]) and len(_of(kept, qid)) == 9
    for j in set(range(8)) - {J}:
        assert list(_pair(kept, qid, j)["options"]) == list(_pair(before, qid, j)["options"])


def _redrawn(body):
    """The scripted replies, except that a statement or foil asked again with a moved seed says so."""
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    seed = body.get("seed")
    if name == "maia_statement" and seed:
        return Reply.json({"statement": f"Redrawn statement {seed}: the chef stays upstairs."})
    reply = responder(body)
    if name and name.startswith("maia_foil_") and name != "maia_foil_structural" and seed:
        return Reply.json({"foil": json.loads(reply.content)["foil"].replace("elsewhere", "downstairs")})
    return reply


@pytest.mark.parametrize(
    ("reason", "asked", "unpaid"),
    [("wrong_gold", ("maia_statements", "maia_foils"), ()), ("ambiguous", ("maia_foils",), ("maia_statements",))],
)
def test_a_rejected_pair_asks_again_only_the_stage_of_its_faulty_field(
    reason, asked, unpaid, corpus, llm_double, llm_double_resource, required
):
    llm_double.responder = _redrawn
    store, llm = corpus, llm_double_resource()
    materialize(store, llm, ALL)
    before = store.read("maia_items")
    qid = _qid(before, Q_CHEF)
    gated = _gate(store)
    revs = {r["item_id"]: revision(r) for r in gated.to_dict("records")}
    pair = _pair(before, qid, J)
    rows = [_v(pair["item_id"], revs[pair["item_id"]], "r1", "reject", n=1, reason=reason)]
    rows += [_v(i, revs[i], "r1", "accept", n=n) for n, i in enumerate(sorted(set(revs) - {pair["item_id"]}), 2)]
    _record(store, rows)

    materialize(store, llm, ALL)
    for stage in asked:  # the pair's own member alone, never the pool's answers
        assert _paid(store, stage) == {f"{qid}_s{J}"}, stage
    for stage in ("maia_questions", "maia_answer_pools", *unpaid):
        assert _paid(store, stage) == set(), stage
    after = store.read("maia_items")
    new = _pair(after, qid, J)
    assert set(new["options"]) != set(pair["options"])
    if reason == "ambiguous":  # the statement stays, the foil is new
        assert set(new["options"]) & set(pair["options"])
    others = after[after["item_id"] != pair["item_id"]]
    assert _stable(others) == _stable(before[before["item_id"] != pair["item_id"]])
