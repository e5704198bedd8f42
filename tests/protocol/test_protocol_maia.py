"""MAIA's answer collection on a real Label Studio: nine people answer a question and the two control
questions (§3.1, App. A.3); the one below 90 % on the controls is excluded, with the reason, and
the pool of the question is built from the other eight people's answers (``answers.source:
people``), through the real stage (LLM test double for its checks)."""

from __future__ import annotations

import json
import shutil

import dagster as dg
import pytest

import assets.recipes.maia.assets as A
from forge.benchmarks.registry import get
from forge.protocol import steps
from forge.storage import TableStore
from resources.nli import NLIResource
from resources.storage import StorageResource
from tests.protocol import helpers as h
from tests.recipes.maia.test_maia_assets import BASE, CLIP, Q_CHEF, corpus, responder  # noqa: F401 - the recipe's fixture
from tests.review import scripted as sr

pytestmark = pytest.mark.slow  # a real Label Studio server

Q_DOG = "What colour is the chef's dog?"  # out of scope: no dog in the clip (a negation is acceptable)
Q_AGE = "How old is the chef exactly?"  # uncertainty: the clip cannot say (uncertainty is acceptable)


def _stage(store: TableStore, llm, stages) -> None:
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", ["b1"])
    resources = {
        "storage": StorageResource(data_dir=str(store.data_dir)),
        "llm": llm,
        "nli": NLIResource(backend="llm"),
    }
    assert dg.materialize(stages, partition_key="b1", instance=instance, resources=resources).success


def text(value: str) -> dict:
    return {"from_name": "answer", "to_name": "question", "type": "textarea", "value": {"text": [value]}}


def test_a_pool_of_eight_peoples_answers_and_an_annotator_below_the_control_threshold_excluded(
    review_env,
    corpus,
    llm_double,
    llm_double_resource,
    recipe_overrides,
    tmp_path,
):
    data, ls, _srv, _configure = review_env
    path = tmp_path / "questions.jsonl"
    rows = [(Q_CHEF, "Total Spatial"), (Q_DOG, "out_of_scope"), (Q_AGE, "uncertainty")]
    path.write_text("".join(json.dumps({"clip_id": CLIP, "category": c, "question": q}) + "\n" for q, c in rows))
    recipe_overrides(
        "maia", {"questions": {"import_path": str(path), "import_only": True}, "answers": {"source": "people"}}
    )
    for sub in ("tables", "media"):  # the recipe's fixture, in the data dir Label Studio serves
        shutil.copytree(corpus.data_dir / sub, data / sub, dirs_exist_ok=True)
    store = TableStore(data)
    llm_double.responder = responder
    llm = llm_double_resource()
    _stage(store, llm, [A.maia_questions])
    qid = {r["question"]: r["question_id"] for r in store.read("maia_questions").to_dict("records")}

    h.materialize(data, "maia", ["maia_answers_tasks"])
    tasks = h.tasks(ls, "answers · maia")
    assert sorted(tasks) == sorted(qid.values()) and not tasks[qid[Q_CHEF]]["predictions"]  # people answer blind
    assert len(tasks[qid[Q_CHEF]]["data"]["frames"]) == 4
    (proj,) = [p for p in ls.projects() if "answers · maia" in p["title"]]
    assert proj["maximum_annotations"] == 8
    people = [sr.reviewer(ls, f"native{i}@maia.example") for i in range(9)]
    for i, person in enumerate(people[:8]):
        sr.submit(ls, tasks[qid[Q_CHEF]], person, [text(BASE[i])])
        sr.submit(ls, tasks[qid[Q_DOG]], person, [text(f"There is no dog in the clip ({i}).")])
        sr.submit(ls, tasks[qid[Q_AGE]], person, [text(f"It is hard to say; maybe {30 + i}.")])
    odd = people[8]  # answers the out-of-scope control as if the dog were there: 1 of 2 controls right
    sr.submit(ls, tasks[qid[Q_CHEF]], odd, [text("He stands on the roof of the pizzeria.")])
    sr.submit(ls, tasks[qid[Q_DOG]], odd, [text("The dog is brown.")])
    sr.submit(ls, tasks[qid[Q_AGE]], odd, [text("Maybe forty.")])
    h.materialize(data, "maia", ["maia_answers_results"])

    excluded = steps.exclusions(store, get("maia"), "answers")
    assert excluded == {odd.email: "below_control_threshold: 1 of 2 control answers right (50% < 90%)"}
    res = h.results(data, "maia__answers")[qid[Q_CHEF]]
    assert res["decided_by"] == "human" and res["n_answers"] == 8 and odd.email not in res["people"]

    _stage(store, llm, [A.maia_answer_pools])
    pools = store.read("maia_answer_pools")
    chef = pools[pools["question_id"] == qid[Q_CHEF]]
    assert len(chef) == 8 and (chef["origin"] == "people").all()
    assert sorted(chef["original_answer"]) == sorted(BASE)  # the eight people's answers, not the ninth's
    calls = store.read("llm_calls")
    assert "maia_answers" not in set(calls.get("prompt_name", []))  # no persona answered
