"""Batch mode through the real openai client against the double's /v1/files + /v1/batches."""

from __future__ import annotations

import json

from forge.llm import LLMRequest, load_prompt
from forge.llm.batch import state_path
from tests.llm_double import Reply


def reqs(prompt, n):
    return [LLMRequest(item_id=f"t{i}", prompt=prompt, variables={"text": f"text {i}"}) for i in range(n)]


def batch_posts(double):
    return [r for r in double.requests if r["path"] == "/v1/batches"]


def test_batch_submit_poll_cache_and_discount(llm_double, llm_double_resource, prompt_dir):
    qa = load_prompt(prompt_dir / "qa.yaml")
    llm_double.batch_polls = 2
    res_cfg = dict(batch_stages=["gen"], batch_poll_s=0.01, prices={"double-model": {"input": 1.0, "output": 1.0}})
    engine = llm_double_resource(**res_cfg).engine()
    res = engine.run("gen", "b", reqs(qa, 5))
    assert all(r.ok for r in res) and [r.item_id for r in res] == [f"t{i}" for i in range(5)]
    assert len(batch_posts(llm_double)) == 1 and not llm_double.chat_requests  # nothing sent online
    df = engine.calls_frame()
    assert set(df["mode"]) == {"batch"} and (df["outcome"] == "ok").all()
    online_cost = (df["tokens_in"] + df["tokens_out"]).sum() / 1e6
    assert abs(df["cost_usd"].sum() - 0.5 * online_cost) < 1e-12
    again = llm_double_resource(**res_cfg).engine().run("gen", "b", reqs(qa, 5))
    assert all(r.cached for r in again) and len(batch_posts(llm_double)) == 1
    assert not state_path(engine, "gen", "b").exists()


def test_batch_resumes_after_restart_without_resubmitting(llm_double, llm_double_resource, prompt_dir):
    qa = load_prompt(prompt_dir / "qa.yaml")
    llm_double.batch_polls = 3
    first = llm_double_resource(batch_stages=["gen"], batch_poll_s=0.01, batch_max_wait_s=0.0).engine()
    res = first.run("gen", "b", reqs(qa, 3))  # gives up waiting: the batch is still running
    assert not any(r.ok for r in res) and "re-run to resume" in res[0].error
    state = json.loads(state_path(first, "gen", "b").read_text())
    [bid] = state["batches"]
    second = llm_double_resource(batch_stages=["gen"], batch_poll_s=0.01).engine()
    res = second.run("gen", "b", reqs(qa, 3))
    assert all(r.ok for r in res)
    assert len(batch_posts(llm_double)) == 1, "the restarted run must poll the stored batch, not submit again"
    assert any(r["path"] == f"/v1/batches/{bid}" for r in llm_double.requests)


def test_batch_resubmits_only_unanswered_and_repairs_invalid(llm_double, llm_double_resource, prompt_dir):
    qa = load_prompt(prompt_dir / "qa.yaml")
    llm_double.batch_expire_lines = 2
    llm_double.script(Reply.text("{broken"), match="text 4")
    llm_double.script(Reply.error(500), match="text 3")
    engine = llm_double_resource(batch_stages=["gen"], batch_poll_s=0.01).engine()
    res = engine.run("gen", "b", reqs(qa, 5))
    assert all(r.ok for r in res), [r.error for r in res]
    posts = batch_posts(llm_double)
    assert len(posts) in (2, 3)  # resubmissions (a third when the 500 line was among the expired)
    processed = [r for r in llm_double.requests if r["path"] == "/v1/batches#line"]
    # 5 lines once, then only the 2 expired and the 1 failed line again: nothing answered is resent
    assert len(processed) == 5 - 2 + 3
    assert len(llm_double.chat_requests) == 1  # the invalid reply's repair went online
    assert "invalid JSON" in llm_double.chat_requests[0]["messages"][-1]["content"]
