"""MAIA as the paper built it (§3, App. A.3–A.8), over HTTP against the plausible model with
injected member failures: every question is kept (its failing members drawn again, then flagged
for review), the grid has A and B in every category of the clip, and no answer request states
the category (out-of-scope and uncertainty were control questions with a predefined answer form)."""

from __future__ import annotations

import json

import assets.recipes.maia.assets as A
from assets.recipes.maia.logic.taxonomy import category
from forge.benchmarks.settings import recipe_settings
from tests.llm_double import Reply
from tests.llm_double.plausible import MISREAD_IT, Plausible
from tests.llm_double.server import message_text
from tests.recipes.maia.test_maia_assets import corpus  # noqa: F401 (fixture)
from tests.recipes.maia.test_maia_language import _run_chain

CATS = ["out_of_scope", "uncertainty", "sentiment"]
PERSONA = recipe_settings("maia", "paper")["answers"]["personas"]["it"][2]


def injected(model: Plausible):
    """The plausible model, plus failures no draw fixes: annotator 3 misreads every question, the
    statement of that answer stays a question; two foils are entailed on every draw (stubborn)."""

    def reply(body):
        name = body["response_format"]["json_schema"]["name"]
        text = message_text(body)
        if name == "maia_answers" and PERSONA in text:
            return Reply.json({"answer": MISREAD_IT})
        if name == "maia_statement" and MISREAD_IT in text:
            return Reply.json({"statement": "Di che cosa parla la domanda del video?"})
        return model(body)

    return reply


def test_every_question_kept_with_flagged_members(corpus, recipe_overrides, llm_double, llm_double_resource):
    recipe_overrides("maia", {"language": "it", "questions": {"categories": CATS}})
    llm_double.responder = injected(Plausible(seed=3, p_flaw=0.3, stubborn={"maia_foil_*": 2}))
    items = _run_chain(corpus, llm_double_resource())
    qs, ans = corpus.read("maia_questions"), corpus.read("maia_answer_pools")
    st, fo, rj = corpus.read("maia_statements"), corpus.read("maia_foils"), corpus.read("rejects")

    # the grid: A and B in every category of the clip (failing questions asked again)
    assert sorted(zip(qs["category"], qs["slot"])) == sorted((c, s) for c in CATS for s in "ab")
    # every question keeps its whole pool: 8 answers, 8 statements, 8 foils, 8 SV items + 1 open-ended
    for table in (ans, st, fo):
        assert table.groupby("question_id").size().eq(8).all() and set(table["question_id"]) == set(qs["question_id"])
    per_q = items["labels"].map(lambda s: json.loads(s)["question_id"]).value_counts()
    assert set(per_q.index) == set(qs["question_id"]) and per_q.eq(9).all()
    assert not (rj["reason"] == "pool_too_small").any()

    # the injected failures: drawn again (a reject row per discarded draw), then kept and flagged
    for table, reason in ((ans, "inconsistent_answer"), (st, "statement_invalid"), (fo, "refine_max_rounds")):
        flagged = table[table["review"].fillna("").str.contains(reason)]
        assert len(flagged) >= (2 if reason.startswith("refine") else len(qs)), (reason, table["review"].dropna())
    assert (ans.loc[ans["idx"] == 2, "answer"] == MISREAD_IT).all()  # kept for the reviewer to fix
    assert {"maia_answer_pools", "maia_statements", "maia_foils"} <= set(rj["stage"])
    reviewed = [json.loads(e).get("review") for e in items["extra"]]
    assert all(reviewed)  # every pool has the misreading annotator: each of its items says so

    # no annotator request states the expected answer form of its category
    sent = [r["body"] for r in llm_double.requests if r["path"].endswith("/chat/completions")]
    answer_reqs = [message_text(b) for b in sent if b["response_format"]["json_schema"]["name"] == "maia_answers"]
    assert answer_reqs
    for cat in CATS:
        c = category(cat, "it")
        assert not any(c.definition in t or c.label in t for t in answer_reqs), cat
    assert A.settings()["answers"]["reseed_attempts"] >= 1
