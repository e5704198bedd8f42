"""II-Bench's human steps on a real Label Studio with scripted people: the people answer on their
own (the LLM judge's verdicts and labels are hidden: no prediction, no judge text in the task, as
Label Studio's API returns it); a person drops an image at inspection and gives a label the LLM did
not; the stages read the results: the dropped image never reaches labels or questions, and the
person's label is the items' label. Re-reading never duplicates a row. Under ``after_commit`` the
draft appears only in a second-pass task made once the person has answered, recorded apart; under
``suggestion`` it is pre-filled and every row says so."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from forge.benchmarks.registry import get
from forge.protocol import form, steps
from forge.review.card import card_lines, human_figures
from forge.storage import TableStore
from resources.storage import StorageResource
from tests.protocol import helpers as h
from tests.recipes.iibench.test_iibench_assets import BATCH, _frames, _q
from tests.review import scripted as sr

pytestmark = pytest.mark.slow  # a real Label Studio server


def responder(body):
    name = (body.get("response_format") or {}).get("json_schema", {}).get("name")
    if name == "iibench_implication":  # the judge keeps every image
        return {"has_implication": True, "implication": "time slips away", "reason": "a visual metaphor"}
    if name == "iibench_labels":
        return {
            "image_type": "painting",
            "domain": "life",
            "emotion": "negative",
            "rhetoric": ["metaphor"],
            "difficulty": "middle",
            "explanation": "The melting clock shows how time slips away unnoticed while we are busy with work.",
        }
    if name == "iibench_questions":
        return {"questions": [_q("What does the clock mean?", "Time slips away.")]}
    if name == "iibench_distractor_judge":
        ok = [{"distractor": i, "plausible": True, "also_correct": False, "reason": ""} for i in range(1, 6)]
        return {"questions": [{"index": 1, "answer_supported": True, "answer_reason": "", "distractors": ok}]}
    return None


def _stages(data, llm, names: list[str]) -> dg.ExecuteInProcessResult:
    from assets.recipes.iibench import assets as A

    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    return dg.materialize(
        [A.iibench_implication, A.iibench_labels, A.iibench_items],
        selection=names,
        partition_key=BATCH,
        instance=instance,
        resources={"storage": StorageResource(data_dir=str(data)), "llm": llm},
        run_config={"ops": {"iibench_labels": {"config": {"min_explanation_chars": 20}}}}
        if "iibench_labels" in names
        else None,
    )


def test_an_image_dropped_at_inspection_never_reaches_annotation(review_env, llm_double, llm_double_resource, tmp_path):
    data, ls, _srv, _configure = review_env
    store = TableStore(data)
    _frames(store, tmp_path)
    llm_double.responder = responder
    llm = llm_double_resource()
    assert _stages(data, llm, ["iibench_implication"]).success  # a, b, c, f kept by the LLM judge

    h.materialize(data, "iibench", ["iibench_inspection_tasks"])
    tasks = h.tasks(ls, "inspection · iibench")
    assert sorted(tasks) == ["img_a", "img_b", "img_c", "img_f"]
    hidden_form(ls, "inspection · iibench", ["time slips away", "a visual metaphor", "LLM judge"])
    keep = [h.choice("inspection", "keep")]
    h.materialize(data, "iibench", ["iibench_inspection_tasks"])  # pushing again adds nothing
    assert len(h.tasks(ls, "inspection · iibench")) == 4

    person = sr.reviewer(ls, "inspector@example.org")
    sr.submit(ls, tasks["img_b"], person, [h.choice("inspection", "drop")])  # no implication: dropped
    sr.submit(ls, tasks["img_a"], person, keep)  # kept, as the judge did
    sr.submit(ls, tasks["img_c"], person, [])  # an empty answer is refused: the LLM's verdict stands
    for _ in range(2):  # re-reading never duplicates rows
        h.materialize(data, "iibench", ["iibench_inspection_results"])
    res = h.results(data, "iibench__inspection")
    assert len(store.read("protocol_results", parts=["iibench__inspection"])) == 4
    assert (res["img_b"]["decided_by"], res["img_b"]["keep"], res["img_b"]["changed"]) == ("human", False, True)
    assert (res["img_a"]["decided_by"], res["img_a"]["keep"], res["img_a"]["changed"]) == ("human", True, False)
    assert (res["img_c"]["decided_by"], res["img_c"]["why_llm"], res["img_c"]["n_refused"]) == ("llm", "refused", 1)
    assert (res["img_f"]["decided_by"], res["img_f"]["why_llm"]) == ("llm", "not_answered")
    ans = store.read("protocol_answers", parts=["iibench__inspection"])
    assert ans["refused"].dropna().str.startswith("inspection: empty_answer").tolist() == [True]
    assert set(ans["person"]) == {"inspector@example.org"}

    assert _stages(data, llm, ["iibench_labels"]).success
    labels = store.read("iibench_labels")
    assert sorted(labels["frame_id"]) == ["img_a", "img_c", "img_f"]  # img_b never reaches annotation

    # the labels step: a person corrects the domain the LLM chose (official spelling on the form)
    h.materialize(data, "iibench", ["iibench_labels_tasks"])
    ltasks = h.tasks(ls, "labels · iibench")
    assert sorted(ltasks) == ["img_a", "img_c", "img_f"]
    (proj,) = [p for p in ls.projects() if "labels · iibench" in p["title"]]
    assert 'value="Others" alias="other"' in proj["label_config"]
    hidden_form(ls, "labels · iibench", ["slips away unnoticed"])
    step = steps.step_of(get("iibench"), "labels")
    llm_row = store.read("iibench_labels").set_index("frame_id").loc["img_a"]
    mine = {**get("iibench").hooks.step_llm_values(step.name, llm_row), "domain": "society"}
    sr.submit(ls, ltasks["img_a"], person, form.prediction(step, mine, "")["result"])  # the person's own labels
    h.materialize(data, "iibench", ["iibench_labels_results"])
    lres = h.results(data, "iibench__labels")
    assert lres["img_a"]["decided_by"] == "human" and lres["img_a"]["values"]["domain"] == "society"
    assert lres["img_a"]["values"]["rhetoric"] == ["metaphor"]

    assert _stages(data, llm, ["iibench_items"]).success
    items = store.read("iibench_items")
    domains = {r["unit_id"]: json.loads(r["labels"])["domain"] for r in items.to_dict("records")}
    assert domains == {"img_a": "society", "img_c": "life", "img_f": "life"}  # img_b: no question

    # the card says for how many units people decided and for how many the LLM's result was used
    section = card_lines({"policy": "advisory", "human_figures": human_figures(store, "iibench")})[1]
    assert (
        "| inspection (iibench_implication) | 4 | 2 (1) | 2 (not_answered 1, refused 1) | 3 | 1 | 1 (0) | hidden 3 | "
        "1 of 2 (50%) |" in section
    )
    assert (
        "| labels (iibench_labels) | 3 | 1 (1) | 2 (not_answered 2) | 3 | 0 | 1 (0) | hidden 1 | 0 of 1 (0%) |"
        in section
    )
    assert all(r["draft_mode"] == "hidden" for r in res.values() if r["decided_by"] == "human")


def hidden_form(ls, title_part: str, llm_texts: list[str]) -> None:
    """The step's form before anyone commits, as Label Studio's API returns it (the project, its
    label config and every task with its predictions): none of the LLM's values in it."""
    (proj,) = [p for p in ls.projects() if title_part in p["title"] and "second pass" not in p["title"]]
    assert proj["show_collab_predictions"] is False
    for t in h.tasks(ls, title_part).values():
        full = ls.request("GET", f"/api/tasks/{t['id']}")
        assert not full.get("predictions") and not t.get("predictions")
        shown = json.dumps(full["data"]) + proj["label_config"]
        for text in llm_texts:
            assert text not in shown, (text, shown)


def test_after_commit_shows_the_draft_only_once_the_person_answered(
    review_env, llm_double, llm_double_resource, tmp_path, recipe_overrides
):
    data, ls, _srv, _configure = review_env
    store = TableStore(data)
    _frames(store, tmp_path)
    llm_double.responder = responder
    assert _stages(data, llm_double_resource(), ["iibench_implication"]).success
    recipe_overrides("iibench", {"protocol": {"inspection": {"draft": "after_commit"}}})
    h.materialize(data, "iibench", ["iibench_inspection_tasks", "iibench_inspection_results"])
    hidden_form(ls, "inspection · iibench", ["time slips away", "LLM judge"])
    assert h.tasks(ls, "inspection · iibench · second pass") == {}  # nobody answered: no draft anywhere

    person, other = sr.reviewer(ls, "first@example.org"), sr.reviewer(ls, "late@example.org")
    sr.submit(ls, h.tasks(ls, "inspection · iibench")["img_b"], person, [h.choice("inspection", "drop")])
    h.materialize(data, "iibench", ["iibench_inspection_results"])
    second = h.tasks(ls, "inspection · iibench · second pass")
    assert sorted(second) == ["img_b"]  # only the answered unit, and only now
    assert "time slips away" in second["img_b"]["data"]["judge"]
    assert second["img_b"]["predictions"][0]["result"][0]["value"]["choices"] == ["keep"]
    sr.submit(ls, second["img_b"], person, [h.choice("inspection", "keep")])  # the second pass, after the draft
    sr.submit(ls, second["img_b"], other, [h.choice("inspection", "drop")])  # never answered first: refused
    h.materialize(data, "iibench", ["iibench_inspection_results"])

    ans = store.read("protocol_answers", parts=["iibench__inspection"])
    mine = ans[ans["person"] == "first@example.org"].sort_values("created_at")
    assert mine["draft_mode"].tolist() == ["hidden", "after_commit"]  # recorded separately
    assert mine["agrees_llm"].tolist() == [False, True]
    late = ans[ans["person"] == "late@example.org"].iloc[0]
    assert late["refused"].startswith("second_pass: no_first_answer")
    res = h.results(data, "iibench__inspection")["img_b"]
    assert (res["decided_by"], res["keep"], res["draft_mode"], res["n_answers"]) == ("human", True, "after_commit", 1)
    section = card_lines({"policy": "advisory", "human_figures": human_figures(store, "iibench")})[1]
    assert "after_commit 2, hidden 1 | 0 of 1 (0%) |" in "\n".join(section)  # agreement: the hidden answer only


def test_suggestion_prefills_and_every_row_says_so(
    review_env, llm_double, llm_double_resource, tmp_path, recipe_overrides
):
    data, ls, _srv, _configure = review_env
    store = TableStore(data)
    _frames(store, tmp_path)
    llm_double.responder = responder
    assert _stages(data, llm_double_resource(), ["iibench_implication"]).success
    recipe_overrides("iibench", {"protocol": {"inspection": {"draft": "suggestion"}}})
    h.materialize(data, "iibench", ["iibench_inspection_tasks"])
    tasks = h.tasks(ls, "inspection · iibench")
    pred = tasks["img_b"]["predictions"][0]
    assert pred["result"][0]["value"]["choices"] == ["keep"] and "time slips away" in tasks["img_b"]["data"]["judge"]
    sr.submit(ls, tasks["img_b"], sr.reviewer(ls, "assisted@example.org"), pred["result"])
    h.materialize(data, "iibench", ["iibench_inspection_results"])
    res = h.results(data, "iibench__inspection")["img_b"]
    assert (res["decided_by"], res["draft_mode"]) == ("human", "suggestion")
    assert store.read("protocol_answers", parts=["iibench__inspection"])["draft_mode"].tolist() == ["suggestion"]
    section = card_lines({"policy": "advisory", "human_figures": human_figures(store, "iibench")})[1]
    assert "| suggestion 1 | - |" in "\n".join(section)  # no agreement from pre-filled answers
