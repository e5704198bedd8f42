"""Per-annotator human baselines on a real Label Studio (II-Bench Table 3's Human_avg and
Human_best): three people answer the exported II-Bench test items blind, each in their own session
through the real API of the blind baseline's own instance; each is scored on their own, and the leaderboard shows `human (avg)` and
`human (best)` with the hand-computed values. An annotator the control questions excluded and an
empty answer are kept with their reasons, never scored; re-reading adds no row."""

from __future__ import annotations

import json

import dagster as dg
import pandas as pd
import pytest

import assets.evals.assets  # noqa: F401 - registers the leaderboard view (as the code location does)
from assets.people.factory import people_defs
from forge.benchmarks.registry import get
from forge.evals.pipeline import load_export
from forge.export.stages import run_export
from forge.splits.config import stage_settings
from forge.storage import TableStore
from forge.storage.contracts import load_contract
from tests.review import scripted as sr
from tests.review import world
from tests.review.test_review_flow import _resources, q

pytestmark = pytest.mark.slow  # a real Label Studio server

DOMAINS = ("life", "art", "life", "society")


def iibench_items(store: TableStore, n: int = 4) -> pd.DataFrame:
    """Gated II-Bench items: one six-option question per image, with its labels."""
    rows = []
    for i in range(1, n + 1):
        media = world.image(store.data_dir, f"iibench_{i}", (30 * i, 90, 160))
        rows.append(
            world.base(
                f"ii{i}",
                "iibench",
                media,
                task="mcq",
                category=DOMAINS[i - 1],
                question=f"What does image {i} imply?",
                options=[f"Option {c} of image {i}" for c in "ABCDEF"],
                option_types=["correct", *["distractor"] * 5],
                labels=json.dumps({"domain": DOMAINS[i - 1], "emotion": "negative", "difficulty": "middle"}),
            )
        )
    return world.write_gated(store, "iibench", rows)


def excluded_by_controls(store: TableStore, person: str) -> None:
    """The control questions' verdict as helper protocol steps write it (``protocol_answers.excluded``)."""
    c = load_contract("protocol_answers")
    row = {
        "benchmark": "iibench",
        "step": "inspection",
        "answer_id": "1:1",
        "unit_id": "img-control",
        "task_id": 1,
        "person": person,
        "values": json.dumps({"keep": "drop"}),
        "refused": None,
        "control": True,
        "control_correct": False,
        "excluded": "below the control threshold: 1 of 2 controls right (0.50 < 0.90)",
        "seconds": 10.0,
        "created_at": pd.Timestamp("2026-01-01", tz="UTC"),
    }
    store.write("protocol_answers", c.conform(pd.DataFrame([row])), "iibench__inspection", schema=c.arrow_schema())


def test_three_people_give_human_avg_and_best_on_the_leaderboard(review_env, ls_blind):
    data, _ls, _srv, configure = review_env
    ls = ls_blind[0]  # the blind baseline's own instance
    configure("defaults: {policy: advisory}\nbenchmarks:\n  iibench: {human_answers: 5}\n")
    store = TableStore(data)
    iibench_items(store)
    spec = get("iibench")
    run_export(store, spec, stage_settings(spec), force_stub=False)
    gold = dict(zip(*(load_export(data / "exports", spec).items[c] for c in ("item_id", "answer")), strict=True))
    assert sorted(gold) == ["ii1", "ii2", "ii3", "ii4"]
    assets = list(people_defs("iibench", "human").assets)
    dg.materialize(assets, selection=["iibench_human_tasks"], resources=_resources(data))
    project = next(p for p in ls.projects() if "blind baseline" in p["title"])
    assert project["maximum_annotations"] == 5  # every person answers every item
    item_of = dict(q(data, "select task_id, item_id from review_tasks where kind = 'human'").itertuples(index=False))
    tasks = {item_of[t["id"]]: t for t in ls.tasks(project["id"])}
    wrong = {g: "B" if g != "B" else "C" for g in "ABCDEF"}
    right = {  # hand-made: p0 4/4, p1 3/4, p2 2/4 → avg 0.75, best 1.0 (p0)
        "p0": {"ii1", "ii2", "ii3", "ii4"},
        "p1": {"ii1", "ii2", "ii3"},
        "p2": {"ii1", "ii4"},
        "p3": {"ii1", "ii2", "ii3", "ii4"},  # all right, but failed the control questions
    }
    for name, ok in right.items():
        who = sr.reviewer(ls, f"{name}@human.test")
        for item, t in sorted(tasks.items()):
            letter = gold[item] if item in ok else wrong[gold[item]]
            sr.submit(ls, t, who, [sr.choice("choice", letter)], seconds=20)
    empty = sr.reviewer(ls, "p4@human.test")
    sr.submit(ls, tasks["ii1"], empty, [])  # the API takes an empty result; the reader refuses it
    excluded_by_controls(store, "p3@human.test")

    dg.materialize(assets, selection=["iibench_human_results"], resources=_resources(data))
    lb = q(data, "select * from leaderboard where model like 'human%' order by model").set_index("model")
    assert list(lb.index) == ["human (avg)", "human (best)"] and set(lb.setting) == {"none"}
    assert lb.loc["human (avg)", "value"] == pytest.approx((1.0 + 0.75 + 0.5) / 3)
    assert lb.loc["human (best)", "value"] == 1.0 and (lb.n == 4).all()
    assert (lb.ci_low <= lb.value).all() and (lb.value <= lb.ci_high).all()
    per = q(data, "select * from human_scores where metric = 'accuracy' and slice = 'all' order by person")
    assert dict(zip(per.person, per.value, strict=True)) == {
        "p0@human.test": 1.0,
        "p1@human.test": 0.75,
        "p2@human.test": 0.5,
    }
    assert per.set_index("person").best.to_dict() == {
        "p0@human.test": True,
        "p1@human.test": False,
        "p2@human.test": False,
    }
    assert (per.n == 4).all() and per.ci_low.notna().all()
    # the paper's slices: life = ii1, ii3 → p0 1, p1 1, p2 0.5
    life = q(data, "select value from eval_scores where model = 'human (avg)' and slice = 'domain=life'").value
    assert life.iloc[0] == pytest.approx((1.0 + 1.0 + 0.5) / 3)

    answers = q(data, "select person, used, excluded_reason from human_answers")
    p3 = answers[answers.person == "p3@human.test"]
    assert len(p3) == 4 and not p3.used.any()
    assert p3.excluded_reason.str.startswith("excluded_annotator: inspection: below the control threshold").all()
    p4 = answers[answers.person == "p4@human.test"]
    assert p4.excluded_reason.tolist() == ["refused: empty_answer (no choice, text or box)"]
    assert len(answers) == 17 and answers.used.sum() == 12

    # re-reading the tool never duplicates rows
    dg.materialize(assets, selection=["iibench_human_results"], resources=_resources(data))
    counts = q(
        data,
        "select (select count(*) from human_answers) a, (select count(*) from human_scores) s, "
        "(select count(*) from eval_scores) e, (select count(*) from eval_predictions) p",
    ).iloc[0]
    assert (counts.a, counts.p) == (17, 12) and counts.s == len(q(data, "select * from human_scores"))
    assert q(data, "select count(*) n from leaderboard where model like 'human%'").n.iloc[0] == 2


def test_open_ended_human_answers_are_judged_by_the_benchmark_judge(
    review_env, ls_blind, llm_double, llm_double_resource
):
    """MAIA's open-ended answers typed by two people are judged by MAIA's judge through the models'
    path (the `llm` resource; the LLM double on 127.0.0.1 stands in for the paid judge)."""
    from tests.review.test_judge_flow import maia_open_ended

    data, _ls, _srv, configure = review_env
    ls = ls_blind[0]  # the blind baseline's own instance
    configure("defaults: {policy: advisory}\nbenchmarks:\n  maia: {human_answers: 2}\n")
    store = TableStore(data)
    maia_open_ended(store, 3)
    spec = get("maia")
    run_export(store, spec, stage_settings(spec), force_stub=False)

    def judge(body):  # the MAIA judge schema: Correct when the answer mentions the rain
        if (body.get("response_format") or {}).get("json_schema", {}).get("name") == "eval_maia_oe_judge":
            answer = body["messages"][-1]["content"]
            answer = answer if isinstance(answer, str) else " ".join(p.get("text", "") for p in answer)
            return {
                "label": "Correct" if "rain" in answer.split("Candidate Answer: ")[-1].split("\n")[0] else "Incorrect"
            }
        return None

    llm_double.responder = judge
    resources = {**_resources(data), "llm": llm_double_resource()}
    assets = list(people_defs("maia", "human").assets)
    dg.materialize(assets, selection=["maia_human_tasks"], resources=resources)
    item_of = dict(q(data, "select task_id, item_id from review_tasks where kind = 'human'").itertuples(index=False))
    project = next(p for p in ls.projects() if "blind baseline" in p["title"])
    tasks = {item_of[t["id"]]: t for t in ls.tasks(project["id"])}
    typed = {  # h1: all three about the rain (3/3); h2: one of three (1/3)
        "h1": {"oe1": "Because of the rain.", "oe2": "The rain started.", "oe3": "It is raining, rain everywhere."},
        "h2": {"oe1": "He is bored.", "oe2": "The rain.", "oe3": "He hears his phone."},
    }
    for name, answers in typed.items():
        who = sr.reviewer(ls, f"{name}@human.test")
        for item, text in answers.items():
            sr.submit(ls, tasks[item], who, [sr.text("answer_text", text)])
    dg.materialize(assets, selection=["maia_human_results"], resources=resources)
    preds = q(
        data, "select model, item_id, judge_ok, judge_model, score from eval_predictions where model like 'human:%'"
    )
    assert len(preds) == 6 and preds.judge_ok.all() and set(preds.judge_model) == {"double-model"}
    per = q(data, "select person, value from human_scores where metric = 'oe_accuracy' and slice = 'all'")
    assert dict(zip(per.person, per.value, strict=True)) == pytest.approx(
        {"h1@human.test": 1.0, "h2@human.test": 1 / 3}
    )
    avg = q(
        data, "select value from eval_scores where model = 'human (avg)' and metric = 'oe_accuracy' and slice = 'all'"
    )
    assert avg.value.iloc[0] == pytest.approx((1.0 + 1 / 3) / 2)
    judged = [b for b in llm_double.chat_requests if "Because of the rain." in json.dumps(b)]
    assert judged, "the judge was asked about the people's answers"
