"""MAIA's answer collection on a real Label Studio (§3.1, App. A.3 "Answers Collection"): people watch
the clip and answer a question and the two control questions; the control answers are judged by the
few-shot LLM judge (its test double here); the one below 90 % on the controls and one who met no
control are excluded, with the reason, and the pool of the question is built from the other eight
people's answers (``answers.source: people``), through the real stage (LLM test double for its
checks). Without the judge (stub backend, no engine) the word rule decides."""

from __future__ import annotations

import json
import shutil

import dagster as dg
import pytest

import assets.recipes.maia.assets as A
from assets.recipes.maia.logic import protocol as MP
from forge.benchmarks.registry import get
from forge.protocol import card, form, steps
from forge.storage import TableStore
from resources.nli import NLIResource
from resources.storage import StorageResource
from tests.llm_double import Reply
from tests.llm_double.server import message_text
from tests.protocol import helpers as h
from tests.recipes.maia.test_maia_assets import BASE, CLIP, Q_CHEF, corpus, responder  # noqa: F401 - the recipe's fixture
from tests.review import scripted as sr

Q_DOG = "What colour is the chef's dog?"  # out of scope: no dog in the clip (a negation is acceptable)
Q_AGE = "How old is the chef exactly?"  # uncertainty: the clip cannot say (uncertainty is acceptable)
CLIP_FILE = f"media/clips/{CLIP}.mp4"


def judging(body):
    """The recipe's double, plus the control judge as GPT-4o would judge: a denial of the dog or an
    uncertain age is acceptable; 'No doubt, the dog is brown.' is not (the word rule would pass it)."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    if schema != "maia_control_judge":
        return responder(body)
    answer = message_text(body).rsplit("A:", 1)[-1].lower()
    return Reply.json({"acceptable": "no dog" in answer or "hard to say" in answer or "maybe" in answer})


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


@pytest.mark.slow  # a real Label Studio server
def test_people_watch_the_clip_and_are_screened_by_the_llm_judged_controls(
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
    (data / CLIP_FILE).parent.mkdir(parents=True, exist_ok=True)
    (data / CLIP_FILE).write_bytes(b"\x00\x00\x00\x18ftypmp42")  # the clip file (its bytes are served, not decoded)
    clips = store.read("clips").assign(path=CLIP_FILE)
    store.write("clips", clips, "b1")
    llm_double.responder = judging
    llm = llm_double_resource()
    _stage(store, llm, [A.maia_questions])
    qid = {r["question"]: r["question_id"] for r in store.read("maia_questions").to_dict("records")}

    h.materialize(data, "maia", ["maia_answers_tasks"])
    tasks = h.tasks(ls, "answers · maia")
    assert sorted(tasks) == sorted(qid.values()) and not tasks[qid[Q_CHEF]]["predictions"]  # people answer blind
    (proj,) = [p for p in ls.projects() if "answers · maia" in p["title"]]
    assert proj["maximum_annotations"] == 8
    # the form plays the clip (Label Studio's <Video>), served from the data dir to a signed-in person
    assert '<Video name="video" value="$video"/>' in proj["label_config"]
    url = tasks[qid[Q_CHEF]]["data"]["video"]
    assert url == steps.local_url(CLIP_FILE) and len(tasks[qid[Q_CHEF]]["data"]["frames"]) == 4
    people = [sr.reviewer(ls, f"native{i}@maia.example") for i in range(10)]
    served = people[0].client.session.get(ls.url + url, timeout=30)
    assert served.status_code == 200 and served.content == (data / CLIP_FILE).read_bytes()

    for i, person in enumerate(people[:8]):
        sr.submit(ls, tasks[qid[Q_CHEF]], person, [text(BASE[i])])
        sr.submit(ls, tasks[qid[Q_DOG]], person, [text(f"There is no dog in the clip ({i}).")])
        sr.submit(ls, tasks[qid[Q_AGE]], person, [text(f"It is hard to say; maybe {30 + i}.")])
    odd = people[8]  # the word rule passes both; the judge finds the dog answer unacceptable: 1 of 2
    sr.submit(ls, tasks[qid[Q_CHEF]], odd, [text("He stands on the roof of the pizzeria.")])
    sr.submit(ls, tasks[qid[Q_DOG]], odd, [text("No doubt, the dog is brown.")])
    sr.submit(ls, tasks[qid[Q_AGE]], odd, [text("Maybe forty.")])
    late = people[9]  # answers the real question only: never met a control
    sr.submit(ls, tasks[qid[Q_CHEF]], late, [text("He is standing by the wood oven.")])
    h.materialize(data, "maia", ["maia_answers_results"], llm=llm)  # the judge: the LLM double

    excluded = steps.exclusions(store, get("maia"), "answers")
    assert excluded == {
        odd.email: "screening: 1 of 2 controls correct (50% < 90%)",
        late.email: "screening: met 0 of 2 control questions",
    }
    shown = "\n".join(card.lines(card.figures(store, "maia")))  # the card says who was excluded and why
    assert "screening: met 0 of 2 control questions" in shown and "1 of 2 controls correct" in shown
    assert late.email not in shown and odd.email not in shown  # numbered, never named
    ans = steps.last(store, steps.ANSWERS, "maia__answers")
    assert ans.loc[ans["person"] == late.email, "excluded"].notna().all()  # recorded on their rows, not dropped
    ctrl = ans[ans["control"].astype(bool)]
    assert len(ctrl) == 18 and ctrl["control_judge"].str.startswith("llm:").all()
    calls = store.read("llm_calls")
    assert (calls["prompt_name"] == "maia_control_judge").sum() == 18
    res = h.results(data, "maia__answers")[qid[Q_CHEF]]
    assert res["decided_by"] == "human" and res["n_answers"] == 8
    assert odd.email not in res["people"] and late.email not in res["people"]

    _stage(store, llm, [A.maia_answer_pools])
    pools = store.read("maia_answer_pools")
    chef = pools[pools["question_id"] == qid[Q_CHEF]]
    assert len(chef) == 8 and (chef["origin"] == "people").all()
    assert sorted(chef["original_answer"]) == sorted(BASE)  # the eight screened people's answers only
    calls = store.read("llm_calls")
    assert "maia_answers" not in set(calls.get("prompt_name", []))  # no persona answered


def _answer(person: str, unit: str, control: bool, correct: bool | None = None) -> dict:
    return {
        "person": person,
        "unit_id": unit,
        "control": control,
        "control_correct": correct,
        "draft_mode": "hidden",
    }


def test_screening_needs_the_declared_number_of_controls_at_the_threshold():
    step = steps.configured(get("maia"), MP.STEP)
    assert (step.control.threshold, step.control.min_answered) == (0.9, 20)  # App. A.3: 18 of 20
    answers = [_answer("a", f"c{i}", True, i != 0) for i in range(20)]  # 19 of 20 right: counts
    answers += [_answer("b", f"c{i}", True, i > 2) for i in range(20)]  # 17 of 20: below 90 %
    answers += [_answer("c", f"c{i}", True, True) for i in range(5)] + [_answer("c", "q", False)]
    out = steps.screen(step, answers, n_controls=40)
    assert out == {
        "b": "screening: 17 of 20 controls correct (85% < 90%)",
        "c": "screening: met 5 of 20 control questions",
    }
    # a queue with fewer controls than the minimum asks for all of them
    assert steps.screen(step, [_answer("c", f"c{i}", True, True) for i in range(5)], n_controls=5) == {}


def test_controls_are_spread_through_the_queue_at_the_declared_rate(recipe_overrides):
    recipe_overrides("maia", {"protocol": {"answers": {"controls": {"rate": 0.25, "min_answered": 2}}}})
    step = steps.configured(get("maia"), MP.STEP)
    assert (step.control.rate, step.control.min_answered, step.control.threshold) == (0.25, 2, 0.9)
    rows = {f"r{i:02d}": {"category": "causal", "question": "?"} for i in range(9)}
    rows |= {f"c{i}": {"category": "uncertainty", "question": "?"} for i in range(3)}
    order = steps.queue(get("maia"), step, rows, sorted(rows))
    assert [i for i, u in enumerate(order) if u.startswith("c")] == [2, 6, 10]  # one in every 4
    recipe_overrides("maia", {"protocol": {"answers": {"controls": {"share": 0.5}}}})
    with pytest.raises(ValueError, match="unknown settings"):
        steps.configured(get("maia"), MP.STEP)


def test_the_word_rule_judges_controls_without_a_judge():
    pairs = [
        ({"category": "out_of_scope", "question": "Q"}, {"answer": "There is no dog."}),
        ({"category": "uncertainty", "question": "Q"}, {"answer": "He is 42."}),
    ]
    assert MP.judge(None, pairs) == [(True, "rule"), (False, "rule")]

    class Stub:  # the offline stub's engine: its verdicts are placeholders (forge.llm.stub.advisory)
        backend_name = "stub"

    assert MP.judge(Stub(), pairs) == [(True, "rule (stub backend)"), (False, "rule (stub backend)")]
    # the read judges through the paper's hooks, by the step's name (its control is ``judged``)
    answers = [{"known": k, "values": json.dumps(v)} for k, v in pairs]
    steps.judge_controls(get("maia"), MP.STEP, answers)
    assert [(a["control_correct"], a["control_judge"]) for a in answers] == [(True, "rule"), (False, "rule")]
    hooks = get("maia").hooks  # which units are controls: the out-of-scope and uncertainty questions
    assert hooks.step_controls(MP.ANSWERS, {"category": "causal", "question": "?"}) is None
    known = {"category": "uncertainty", "question": "Why?"}
    assert hooks.step_controls(MP.ANSWERS, {**known, "clip_id": "c1"}) == known
    assert "<Video" in form.label_config(MP.STEP)
