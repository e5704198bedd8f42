"""Issue 23 (items flow, deadlines, hedging, progress) and issue 14 points 6 and 8 (endpoint in
the cache key, transient faults retried within per-kind budgets), against the double."""

from __future__ import annotations

import hashlib
import json
import logging
import random
import time

import pytest

from forge.checks.nli import DEFAULT_PROMPT as NLI_PROMPT
from forge.checks.nli import LLMNLI
from forge.llm import LLMRequest, load_prompt
from forge.llm.ledger import read_ledger
from forge.llm.refine import Verdict, refine
from resources.llm import LLMResource, env_settings
from tests.llm_double import LLMDouble, Reply
from tests.llm_double.server import message_text

GOOD = {"question": "Is the speaker sincere?", "label": "irony", "n": 2}


def reqs(prompt, n, prefix="t"):
    return [
        LLMRequest(item_id=f"{prefix}{i}", prompt=prompt, variables={"text": f"{prefix} text {i}"}) for i in range(n)
    ]


def warm(engine, prompt, double):
    """One answered request, so the client counts as warmed up (deadlines then apply from the start)."""
    engine.run("warm", "b", [LLMRequest(item_id="w", prompt=prompt, variables={"text": "warm-up"})])
    double.reset()
    engine.reset_calls()


def test_hung_request_is_hedged_and_the_first_reply_wins(llm_double, llm_double_resource, prompt_dir, tmp_path):
    res = llm_double_resource(hedge=True, hedge_after_s=0.3, timeout_s=30, ledger_path=str(tmp_path / "l.sqlite"))
    engine = res.engine()
    warm(engine, load_prompt(prompt_dir / "qa.yaml"), llm_double)
    llm_double.script(Reply.hang(), Reply.json(GOOD))
    [r] = engine.run("gen", "b", reqs(load_prompt(prompt_dir / "qa.yaml"), 1))
    assert r.ok and r.data == GOOD and r.attempts == 2
    df = engine.calls_frame()
    assert list(df["outcome"]) == ["retry", "ok"]
    assert df["error_class"][0] == "Backend:timeout" and "hedged" in df["error"][0]
    assert df["latency_s"][0] >= 0.3  # the time the stalled copy cost is on the call log
    assert engine.status.hedged == 1 and engine.status.timed_out == 0
    ledger = read_ledger(tmp_path / "l.sqlite").query("stage == 'gen'").sort_values("created_at")
    # the hung copy was cancelled when the hedge answered (not waited out to the 30 s timeout)
    assert list(ledger["kind"]) == ["hedge", "call"] and list(ledger["status"]) == ["ok", "cancelled"]
    assert llm_double.hung == 1 and len(llm_double.chat_requests) == 2


def test_without_hedging_a_stalled_request_is_cancelled_and_retried_at_once(
    llm_double, llm_double_resource, prompt_dir
):
    engine = llm_double_resource(hedge=False, hedge_after_s=0.3, timeout_s=30, backoff_base_s=5.0).engine()
    warm(engine, load_prompt(prompt_dir / "qa.yaml"), llm_double)
    llm_double.script(Reply.hang(), Reply.json(GOOD))
    [r] = engine.run("gen", "b", reqs(load_prompt(prompt_dir / "qa.yaml"), 1))
    assert r.ok and r.attempts == 2
    df = engine.calls_frame()
    assert list(df["outcome"]) == ["retry", "ok"] and "adaptive deadline" in df["error"][0]
    assert engine.status.timed_out == 1 and engine.status.hedged == 0
    times = [q["t"] for q in llm_double.requests]
    assert times[1] - times[0] < 5.0  # retried at once, not after the 5 s backoff


def test_first_byte_timeout_is_set_per_stage(llm_double, llm_double_resource, prompt_dir):
    qa = load_prompt(prompt_dir / "qa.yaml")
    llm_double.script(Reply.timeout(3.0), Reply.json(GOOD))
    engine = llm_double_resource(
        timeout_s=20, hedge=False, stage_overrides={"tight": {"first_byte_timeout_s": 0.4}}
    ).engine()
    assert engine.timeouts("tight") == {"connect": 10.0, "first_byte": 0.4, "total": 20.0}
    assert engine.timeouts("other")["first_byte"] == 20.0
    [r] = engine.run("tight", "b", reqs(qa, 1))
    assert r.ok and r.attempts == 2
    df = engine.calls_frame()
    assert df["error_class"][0] == "Backend:timeout" and "first byte within 0.4s" in df["error"][0]


def test_deadlines_come_from_the_environment():
    env = {
        "SUBTEXT_LLM_TIMEOUT_S": "7",
        "SUBTEXT_LLM_CONNECT_TIMEOUT_S": "2",
        "SUBTEXT_LLM_HEDGE": "off",
        "SUBTEXT_LLM_FIRST_BYTE_TIMEOUT_S": "5",
        "SUBTEXT_LLM_STAGE_OVERRIDES": json.dumps({"maia_foils": {"timeout_s": 3, "hedge_after_s": 1.5}}),
    }
    cfg = env_settings(env)
    assert cfg["timeout_s"] == 7.0 and cfg["connect_timeout_s"] == 2.0 and cfg["hedge"] is False
    s = LLMResource(backend="stub", **cfg).settings()
    assert s.stage("maia_foils", "timeout_s") == 3 and s.stage("other", "timeout_s") == 7.0
    assert s.stage("maia_foils", "hedge_after_s") == 1.5 and s.stage("other", "hedge_after_s") is None
    with pytest.raises(ValueError, match="unknown keys"):
        LLMResource(backend="stub", stage_overrides={"x": {"timout_s": 3}}).settings()


def test_refine_items_flow_without_waiting_for_each_other(llm_double, llm_double_resource, prompt_dir):
    """The fast item runs its whole refine loop while the slow item's first generation is still out."""
    qa, judge = load_prompt(prompt_dir / "qa.yaml"), load_prompt(prompt_dir / "judge.yaml")
    llm_double.script(Reply.json(GOOD, delay=1.5), match="slow text")
    verdicts = iter([{"verdict": "major", "feedback": "fix"}, {"verdict": "pass", "feedback": ""}])
    gens = iter(range(100))

    def respond(body):
        if "Question:" not in message_text(body):
            return {**GOOD, "question": f"Question number {next(gens)}?"}
        if "fast" in json.dumps(body):
            return next(verdicts, {"verdict": "pass", "feedback": ""})
        return {"verdict": "pass", "feedback": ""}

    llm_double.responder = respond
    items = [
        LLMRequest(item_id="fast", prompt=qa, variables={"text": "fast text"}),
        LLMRequest(item_id="slow", prompt=qa, variables={"text": "slow text"}),
    ]

    def build(req, out):
        return LLMRequest(
            item_id=req.item_id, prompt=judge, variables={"question": f"{req.item_id}: {out['question']}"}
        )

    engine = llm_double_resource(timeout_s=20).engine()
    run = refine(engine, "s", "b", items, judge=build)
    assert [o.status for o in run.outcomes] == ["accepted", "accepted"], [(o.reason, o.detail) for o in run.outcomes]
    assert [o.rounds for o in run.outcomes] == [1, 0]
    order = [("slow" if "slow" in json.dumps(r["body"]) else "fast") for r in llm_double.requests]
    # fast: generate, judge (major), regenerate, judge (pass): all four before the slow item's judge call
    assert order.index("slow", order.index("slow") + 1) > [i for i, x in enumerate(order) if x == "fast"][-1]


def test_llm_checks_in_the_refine_loop_run_concurrently(llm_double, llm_double_resource, prompt_dir):
    """MAIA's NLI check (one LLM call per item) no longer sends one request at a time."""
    from assets.recipes.maia.logic.foils import nli_check

    qa = load_prompt(prompt_dir / "qa.yaml")
    nli_arrivals: list[float] = []

    def respond(body):
        if ((body.get("response_format") or {}).get("json_schema") or {}).get("name") == "nli":
            nli_arrivals.append(time.monotonic())
            return Reply.json({"label": "neutral"}, delay=1.0)
        return None

    llm_double.responder = respond
    engine = llm_double_resource(timeout_s=20).engine()
    nli = LLMNLI(engine, load_prompt(NLI_PROMPT), "s_nli", "b")
    labels: dict[str, str] = {}
    check = nli_check(nli, labels)
    items = [
        LLMRequest(item_id=f"i{k}", prompt=qa, variables={"text": f"t{k}", "caption": f"caption {k}"}) for k in range(4)
    ]
    run = refine(engine, "s", "b", items, checks=[check])
    assert [o.status for o in run.outcomes] == ["accepted"] * 4 and set(labels.values()) == {"neutral"}
    assert len(nli_arrivals) == 4
    # every NLI request was sent before the first NLI reply (each takes 1 s): they overlapped
    assert max(nli_arrivals) - min(nli_arrivals) < 0.9


def test_a_crashing_check_still_rejects_only_its_item(llm_double, llm_double_resource, prompt_dir):
    qa = load_prompt(prompt_dir / "qa.yaml")

    def picky(req, out):
        if req.item_id == "t1":
            raise RuntimeError("boom")
        return Verdict("pass")

    run = refine(llm_double_resource().engine(), "s", "b", reqs(qa, 3), checks=[picky])
    assert [o.status for o in run.outcomes] == ["accepted", "rejected", "accepted"]
    assert "check crashed: RuntimeError: boom" in run.outcomes[1].detail
    assert run.attempts_frame().query("item_id == 't1'")["step"].tolist() == ["generate", "check:picky"]


def _fault_responder(rates: dict[str, float], seed: str = "faults"):
    """Seeded per request body and repeat count: the same run gets the same faults."""
    seen: dict[str, int] = {}

    def respond(body):
        digest = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest()
        seen[digest] = seen.get(digest, 0) + 1
        rng = random.Random(f"{seed}:{digest}:{seen[digest]}")
        x = rng.random()
        for kind, p in rates.items():
            if x < p:
                if kind == "500":
                    return Reply.error(500)
                if kind == "bad_json":
                    return Reply.text('{"question": "Is it')
                if kind == "invalid_schema":
                    return Reply.json({"question": "Why?", "label": "sarcasm", "n": 9})
                if kind == "hang":
                    return Reply.hang()
            x -= p
        return Reply.json(GOOD)

    return respond


def test_transient_faults_never_cost_an_item(llm_double, llm_double_resource, prompt_dir):
    """A harsh mix (30 % 500s, 15 % bad JSON, 15 % schema-invalid): the old single repair lost items."""
    llm_double.responder = _fault_responder({"500": 0.3, "bad_json": 0.15, "invalid_schema": 0.15})
    engine = llm_double_resource(backoff_base_s=0.01, max_concurrency=16).engine()
    results = engine.run("gen", "b", reqs(load_prompt(prompt_dir / "qa.yaml"), 60))
    assert [r.error for r in results if not r.ok] == []
    df = engine.calls_frame()
    assert {"retry", "invalid"} <= set(df["outcome"])  # faults did happen and were absorbed


def test_timeouts_are_retried_within_their_own_budget(llm_double, llm_double_resource, prompt_dir):
    llm_double.script(*[Reply.timeout(2.0)] * 3, match="t text 0")
    engine = llm_double_resource(timeout_s=0.3, hedge=False, retry_budgets={"timeout": 2}, max_retries=9).engine()
    [r] = engine.run("gen", "b", reqs(load_prompt(prompt_dir / "qa.yaml"), 1))
    assert not r.ok and r.error_class == "Backend:timeout" and r.attempts == 3


def test_cache_key_includes_the_endpoint(prompt_dir, tmp_path):
    """Two servers serving the same model id never share replies; the same server does."""
    qa = load_prompt(prompt_dir / "qa.yaml")
    cache = str(tmp_path / "shared_cache.sqlite")
    with LLMDouble() as a, LLMDouble() as b:
        a.responder = lambda body: GOOD
        b.responder = lambda body: {**GOOD, "label": "metaphor"}
        ra = LLMResource(backend="openai", base_url=a.base_url, api_key="k", model="m", cache_path=cache)
        rb = LLMResource(backend="openai", base_url=b.base_url, api_key="k", model="m", cache_path=cache)
        [x] = ra.engine().run("s", "p", reqs(qa, 1))
        [y] = rb.engine().run("s", "p", reqs(qa, 1))
        [z] = ra.engine().run("s", "p", reqs(qa, 1))
        named = LLMResource(
            backend="openai", base_url=b.base_url, api_key="k", model="m", cache_path=cache, provider="team-vllm"
        )
        [w] = named.engine().run("s", "p", reqs(qa, 1))
    assert x.data["label"] == "irony" and y.data["label"] == "metaphor" and not y.cached
    assert z.cached and z.data["label"] == "irony"
    assert not w.cached  # a configured provider name is its own identity
    assert len(a.chat_requests) == 1 and len(b.chat_requests) == 2


def test_progress_line_says_what_requests_are_doing(llm_double, llm_double_resource, prompt_dir, caplog):
    llm_double.script(Reply.rate_limited(0.5), match="t text 0")
    engine = llm_double_resource(backoff_base_s=0.01).engine()
    engine.settings.progress_every_s = 0.0
    import forge.llm.progress as eng

    old = eng._Progress.__init__.__defaults__
    eng._Progress.__init__.__defaults__ = (0.0,)
    try:
        with caplog.at_level(logging.INFO, logger="subtext_forge.llm"):
            engine.run("gen", "b", reqs(load_prompt(prompt_dir / "qa.yaml"), 3))
    finally:
        eng._Progress.__init__.__defaults__ = old
    lines = [r.getMessage() for r in caplog.records if r.name == "subtext_forge.llm"]
    assert any("waiting on retry-after 1" in ln for ln in lines)
    assert all("in flight" in ln and "timed out" in ln for ln in lines)


def test_partitions_share_one_budget_and_do_not_wait_for_each_other(llm_double, llm_double_resource, prompt_dir):
    qa = load_prompt(prompt_dir / "qa.yaml")
    llm_double.script(Reply.json(GOOD, delay=1.0), match="a text 0")
    engine = llm_double_resource(max_concurrency=8).engine()
    out = engine.map_partitions(["a", "b"], lambda p: engine.run("s", p, reqs(qa, 1, prefix=p)))
    assert [[r.ok for r in rs] for rs in out] == [[True], [True]]
    assert llm_double.max_in_flight == 2  # b's request went out while a's was still unanswered
    assert set(engine.calls_frame()["partition"]) == {"a", "b"}


def _finishes(fn, within_s: float):
    """``fn()``'s value, or a test failure if it has not returned after ``within_s`` (a deadlock)."""
    import threading

    box: dict[str, object] = {}
    t = threading.Thread(target=lambda: box.setdefault("v", fn()), daemon=True)
    t.start()
    t.join(within_s)
    assert not t.is_alive(), f"still waiting after {within_s} s: requests deadlocked on the concurrency budget"
    return box["v"]


@pytest.mark.parametrize("first", ["slow 5xx", "hang"])
def test_hedges_on_a_full_budget_never_deadlock(llm_double, llm_double_resource, prompt_dir, first):
    """Every slot is held by a stalled request that wants a hedge: the slots are per HTTP attempt, so
    when a stalled copy ends (an error, the total timeout) its slot goes to a waiting hedge."""
    qa = load_prompt(prompt_dir / "qa.yaml")
    engine = llm_double_resource(
        max_concurrency=2, hedge=True, hedge_after_s=0.2, timeout_s=1.0, backoff_base_s=0.05
    ).engine()
    warm(engine, qa, llm_double)
    stall = Reply(status=500, error_message="upstream died", delay=0.6) if first == "slow 5xx" else Reply.hang()
    llm_double.script(stall, stall, Reply.json(GOOD), Reply.json(GOOD))
    out = _finishes(lambda: engine.run("gen", "b", reqs(qa, 2)), within_s=20)
    assert [r.ok for r in out] == [True, True]
    # the budget still bounds what is sent (the double's own count also holds copies the client
    # already gave up on, so the engine's gauge is the one to read)
    assert engine.max_in_flight <= 2 and engine.status.in_flight == 0
    assert engine.status.hedged >= 1


def test_stalled_runs_of_one_name_share_one_progress_line(llm_double, llm_double_resource, prompt_dir, caplog):
    """MAIA refines each pool of a batch as its own run under one name: 12 of them stalled for
    ~2 s log about one line per second between them, not one each (the 2-hour stall of a
    long-tail fault run wrote 16,000 such lines)."""
    qa = load_prompt(prompt_dir / "qa.yaml")
    llm_double.script(*[Reply.json(GOOD, delay=2.2) for _ in range(12)])
    engine = llm_double_resource(max_concurrency=16, hedge=False, timeout_s=30).engine()
    engine.settings.progress_every_s = 1.0
    with caplog.at_level(logging.INFO, logger="subtext_forge.llm"):
        engine.map_partitions(
            [f"p{i}" for i in range(12)], lambda k: refine(engine, "pools", "batch-0", reqs(qa, 1, prefix=k))
        )
    lines = [r.getMessage() for r in caplog.records if "pools batch-0 (refine, items)" in r.getMessage()]
    ticks = [ln for ln in lines if "0/1 LLM" in ln]
    assert 1 <= len(ticks) <= 4, lines  # ~2 ticks of one shared line, not 12 per tick
    import forge.llm.progress as eng

    assert "pools batch-0 (refine, items)" not in eng._SHARED_LIVE  # every run let go of its name


def test_a_hedge_goes_ahead_of_queued_requests_on_a_full_budget(llm_double, llm_double_resource, prompt_dir):
    """Mid-stage the budget is full and requests queue for it; a stalled request's hedge takes the
    next free slot instead of waiting behind the whole queue (FIFO would send it last)."""
    qa = load_prompt(prompt_dir / "qa.yaml")
    engine = llm_double_resource(max_concurrency=2, hedge=True, hedge_after_s=1.0, timeout_s=30).engine()
    warm(engine, qa, llm_double)
    llm_double.responder = lambda body: Reply.json(GOOD, delay=0.3)
    llm_double.script(Reply.hang(), match="stalled text")
    items = [LLMRequest(item_id="s", prompt=qa, variables={"text": "stalled text"})] + reqs(qa, 15, prefix="q")
    out = engine.run("gen", "b", items)
    assert all(r.ok for r in out), [r.error for r in out if not r.ok]
    stalled = [q["t"] for q in llm_double.requests if "stalled text" in message_text(q["body"])]
    assert len(stalled) == 2
    # the hedge is due 1 s in and takes the slot freed 0.3 s later at most; FIFO would hand it one
    # only after the ~11 requests still queued ahead of it (≈ 4.5 s in)
    assert stalled[1] - stalled[0] < 1.8
    others = [q["t"] for q in llm_double.requests if "stalled text" not in message_text(q["body"])]
    assert sum(t > stalled[1] for t in others) >= 8  # most of the queue went out after the hedge
    # one hedge: it answered before the next deadline (a hedge left waiting in the queue spawned more)
    assert engine.status.hedged == 1
    assert engine.max_in_flight <= 2
