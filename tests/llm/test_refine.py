"""The validate-and-refine loop: pass / minor / major / reject paths and the K bound."""

from __future__ import annotations

import json

from forge.llm import LLMRequest, load_prompt
from forge.llm.refine import Verdict, refine
from tests.llm_double import Reply

GOOD = {"question": "Is the speaker sincere?", "label": "irony", "n": 2}


def judge_builder(judge_prompt):
    def build(req, output):
        return LLMRequest(item_id=req.item_id, prompt=judge_prompt, variables={"question": output["question"]})

    return build


def test_refine_paths_with_llm_judge(llm_double, llm_double_resource, prompt_dir):
    qa, judge = load_prompt(prompt_dir / "qa.yaml"), load_prompt(prompt_dir / "judge.yaml")
    gen_count: dict[str, int] = {}

    def responder(body):
        name = body["response_format"]["json_schema"]["name"]
        text = "\n".join(m["content"] for m in body["messages"] if isinstance(m["content"], str))
        if name == "qa":
            item = text.split("Text: ")[-1].split()[0]
            gen_count[item] = gen_count.get(item, 0) + 1
            return Reply.json({**GOOD, "question": f"{item} question v{gen_count[item]}"})
        q = text.split("Question: ")[-1]
        item, version = q.split()[0], q.split()[-1]
        verdicts = {
            "pass": "pass",
            "minor": "minor",
            "reject": "reject",
            "forever": "major",
            "fixed": "major" if version == "v1" else "pass",
        }
        return Reply.json({"verdict": verdicts[item], "feedback": f"feedback for {item} {version}"})

    llm_double.responder = responder
    engine = llm_double_resource().engine()
    items = ["pass", "minor", "reject", "forever", "fixed"]
    reqs = [LLMRequest(item_id=i, prompt=qa, variables={"text": f"{i} something"}) for i in items]
    run = refine(engine, "vimu_qa", "b", reqs, judge=judge_builder(judge), max_rounds=3)
    by = {o.item_id: o for o in run.outcomes}
    assert [o.item_id for o in run.outcomes] == items
    assert by["pass"].accepted and by["pass"].rounds == 0 and by["pass"].data["question"] == "pass question v1"
    assert by["minor"].accepted and by["minor"].verdict.label == "minor"
    assert not by["reject"].accepted and by["reject"].reason == "verdict_reject"
    assert not by["forever"].accepted and by["forever"].reason == "max_rounds" and by["forever"].rounds == 3
    assert gen_count["forever"] == 4  # K = 3 refinement rounds after the first generation
    assert by["fixed"].accepted and by["fixed"].rounds == 1 and by["fixed"].data["question"] == "fixed question v2"
    # the regeneration saw its previous output and the judge's feedback
    regen = [
        b
        for b in llm_double.chat_requests
        if b["response_format"]["json_schema"]["name"] == "qa"
        and "fixed something" in json.dumps(b)
        and len(b["messages"]) > 4
    ][0]
    assert "feedback for fixed v1" in regen["messages"][-1]["content"]
    assert json.loads(regen["messages"][-2]["content"])["question"] == "fixed question v1"
    df = run.attempts_frame()
    assert len(df[(df.item_id == "forever") & (df.step == "judge")]) == 4
    assert set(df[df.item_id == "fixed"]["final_status"]) == {"accepted"}
    assert not df.duplicated(["stage", "partition", "item_id", "round", "step"]).any()


def test_refine_programmatic_checks_skip_judge_and_failures_reject(llm_double, llm_double_resource, prompt_dir):
    qa, judge = load_prompt(prompt_dir / "qa.yaml"), load_prompt(prompt_dir / "judge.yaml")
    llm_double.script(Reply.error(400, "bad request"), match="broken")
    llm_double.script(Reply.json({"verdict": "pass", "feedback": ""}), match="judge")

    def no_hint(req, out):
        return Verdict("reject", "question names the label") if "hint" in req.variables["text"] else None

    reqs = [
        LLMRequest(item_id=i, prompt=qa, variables={"text": t})
        for i, t in [("a", "plain"), ("b", "hint given"), ("c", "broken one")]
    ]
    run = refine(llm_double_resource().engine(), "s", "b", reqs, checks=[no_hint], judge=judge_builder(judge))
    by = {o.item_id: o for o in run.outcomes}
    assert by["a"].accepted
    assert by["b"].reason == "verdict_reject" and "label" in by["b"].detail
    assert by["c"].reason == "generation_failed" and by["c"].data is None
    judged = [b for b in llm_double.chat_requests if b["response_format"]["json_schema"]["name"] == "judge"]
    assert len(judged) == 1  # only the item that passed its checks went to the judge
    from forge.storage import RejectLog

    log = RejectLog("s", "b")
    run.add_rejects(log)
    assert sorted(log.frame()["reason"]) == ["refine_generation_failed", "refine_verdict_reject"]


def test_refine_judge_failure_rejects_never_fills_in(llm_double, llm_double_resource, prompt_dir):
    qa, judge = load_prompt(prompt_dir / "qa.yaml"), load_prompt(prompt_dir / "judge.yaml")
    llm_double.script(Reply.text("not json"), Reply.text("still not json"), match="judge")
    run = refine(
        llm_double_resource(repair_budgets={"JSONDecodeError": 1}).engine(),
        "s",
        "b",
        [LLMRequest(item_id="a", prompt=qa, variables={"text": "x"})],
        judge=judge_builder(judge),
    )
    [o] = run.outcomes
    assert not o.accepted and o.reason == "judge_failed" and "invalid JSON" in o.detail


def test_stub_verdicts_are_recorded_not_applied(prompt_dir, tmp_path):
    """Offline stub: a failing check, a crashing check and a random judge verdict are all recorded
    (attempt rows flagged advisory, the would-be verdict on the outcome); the item is accepted."""
    from forge.llm.stub import advisory
    from resources.llm import LLMResource

    qa, judge = load_prompt(prompt_dir / "qa.yaml"), load_prompt(prompt_dir / "judge.yaml")
    engine = LLMResource(backend="stub", cache_path=str(tmp_path / "c.sqlite")).engine()
    assert advisory(engine) and advisory("stub") and not advisory("openai") and not advisory(None)

    def always_major(req, out):
        return Verdict("major", "placeholder text repeats itself")

    def crashes(req, out):
        raise KeyError("no such field in a placeholder")

    reqs = [LLMRequest(item_id=i, prompt=qa, variables={"text": i}) for i in ("a", "b")]
    run = refine(engine, "s", "b", reqs, checks=[always_major, crashes], judge=judge_builder(judge), max_rounds=2)
    assert [o.accepted for o in run.outcomes] == [True, True]
    for o in run.outcomes:
        assert o.rounds == 0 and o.result.backend == "stub" and advisory(o.result)
        assert o.advisory is not None and o.advisory.label == "reject"  # the crash: what it would have been
    df = run.attempts_frame()
    checks = df[df.step.str.startswith("check:")]
    assert set(checks["verdict"]) == {"major", "reject"} and checks["advisory"].all()
    judged = df[df.step == "judge"]
    assert len(judged) == 2 and judged["advisory"].all()  # the judge still ran: its verdict is on record
    assert not df[df.step == "generate"]["advisory"].any()
    assert set(df["final_status"]) == {"accepted"}
