"""Issue 19 point 2: the spend ledger is exact — one row per reply, written before it is used,
surviving a kill -9 — and matches the endpoint's own count of replies served."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from forge.llm import (
    EngineSettings,
    LLMCache,
    LLMEngine,
    LLMRequest,
    StubBackend,
    load_prompt,
)
from forge.llm.ledger import SpendLedger, read_ledger, spend_by
from resources.llm import DEFAULT_PRICES
from tests.llm_double import Reply

ROOT = Path(__file__).resolve().parents[2]
PRICE = DEFAULT_PRICES["gpt-4o-mini"]


def served_cost(served) -> float:
    return sum(tin * PRICE["input"] + tout * PRICE["output"] for _, tin, tout in served) / 1e6


WORKER = textwrap.dedent("""
    import sys
    from forge.llm import LLMRequest, load_prompt
    from resources.llm import LLMResource

    base_url, cache, ledger, prompt, n = sys.argv[1:6]
    llm = LLMResource(backend="openai", base_url=base_url, api_key="sk-test", model="gpt-4o-mini",
                      cache_path=cache, ledger_path=ledger, max_concurrency=4, hedge=False, timeout_s=120,
                      hedge_initial_s=100)
    qa = load_prompt(prompt)
    res = llm.engine().run("gen", "b1", [LLMRequest(item_id=f"i{k}", prompt=qa, variables={"text": f"item {k}"})
                                         for k in range(int(n))])
    print(sum(r.ok for r in res), flush=True)
""")


def _worker(double, tmp_path, prompt_dir, n) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            WORKER,
            double.base_url,
            str(tmp_path / "cache.sqlite"),
            str(tmp_path / "ledger.sqlite"),
            str(prompt_dir / "qa.yaml"),
            str(n),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_ledger_equals_the_servers_count_after_a_kill_and_a_rerun(llm_double, tmp_path, prompt_dir):
    # 12 replies are served, then every request hangs: the step is killed with 4 requests in flight.
    llm_double.script(*[Reply.json({"question": f"Question {k}?", "label": "irony", "n": 1}) for k in range(12)])
    llm_double.responder = lambda body: Reply.hang()
    proc = _worker(llm_double, tmp_path, prompt_dir, 30)
    try:
        deadline = time.monotonic() + 120
        while llm_double.hung < 4:  # all 4 slots hang: every served reply has been handled by the client
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the worker never filled its slots"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert len(llm_double.served) == 12
    ledger = read_ledger(tmp_path / "ledger.sqlite")
    paid = ledger[ledger["kind"] != "cache_hit"]
    assert sorted(paid["request_id"]) == sorted(rid for rid, _, _ in llm_double.served)
    assert (paid["status"] == "ok").all() and paid["request_id"].is_unique
    assert paid["cost_usd"].sum() == pytest.approx(served_cost(llm_double.served), abs=1e-12)

    # Re-run against a healthy server: the 12 paid replies are cache hits (zero-cost rows), 18 new calls.
    llm_double.responder = None
    proc = _worker(llm_double, tmp_path, prompt_dir, 30)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    assert out.strip() == "30"
    ledger = read_ledger(tmp_path / "ledger.sqlite")
    paid = ledger[ledger["kind"] != "cache_hit"]
    hits = ledger[ledger["kind"] == "cache_hit"]
    assert len(llm_double.served) == 30 and len(paid) == 30 and len(hits) == 12
    assert sorted(paid["request_id"]) == sorted(rid for rid, _, _ in llm_double.served)
    assert (hits["cost_usd"] == 0).all()
    assert paid["cost_usd"].sum() == pytest.approx(served_cost(llm_double.served), abs=1e-12)
    by_stage = spend_by(tmp_path / "ledger.sqlite", by=("stage",))
    assert int(by_stage["requests"][0]) == 30 and int(by_stage["cache_hits"][0]) == 12


def test_every_attempt_is_one_row_and_failed_attempts_cost_nothing(
    llm_double, llm_double_resource, prompt_dir, tmp_path
):
    qa = load_prompt(prompt_dir / "qa.yaml")
    llm_double.script(Reply.error(500), Reply.text("{broken"), match="t text 0")
    engine = llm_double_resource(
        backoff_base_s=0.01, model="gpt-4o-mini", ledger_path=str(tmp_path / "l.sqlite"), prices=DEFAULT_PRICES
    ).engine()
    res = engine.run(
        "gen", "b", [LLMRequest(item_id=f"t{k}", prompt=qa, variables={"text": f"t text {k}"}) for k in range(3)]
    )
    assert all(r.ok for r in res)
    ledger = read_ledger(tmp_path / "l.sqlite")
    assert len(ledger) == len(llm_double.chat_requests) == 5
    assert sorted(ledger["status"]) == ["http_500", "ok", "ok", "ok", "ok"]
    assert ledger.loc[ledger["status"] == "http_500", "cost_usd"].sum() == 0
    # the invalid reply was delivered (and billed): it is a paid row like the others
    assert ledger["cost_usd"].sum() == pytest.approx(served_cost(llm_double.served), abs=1e-12)
    assert len(llm_double.served) == 4
    assert set(ledger["request_id"]) >= {rid for rid, _, _ in llm_double.served}
    # the call log's spend agrees with the ledger
    assert engine.calls_frame()["cost_usd"].sum() == pytest.approx(ledger["cost_usd"].sum(), abs=1e-12)


def test_ledger_is_append_only(tmp_path):
    led = SpendLedger(tmp_path / "l.sqlite")
    led.append({"request_id": "r1", "kind": "call", "status": "ok", "cost_usd": 0.5})
    with pytest.raises(sqlite3.IntegrityError):
        led.append({"request_id": "r1", "kind": "call", "status": "ok"})  # keyed by request id
    con = sqlite3.connect(tmp_path / "l.sqlite")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        con.execute("update llm_ledger set cost_usd = 0")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        con.execute("delete from llm_ledger")
    assert read_ledger(tmp_path / "l.sqlite")["cost_usd"].tolist() == [0.5]


def test_stub_calls_cost_nothing(prompt_dir, tmp_path):
    qa = load_prompt(prompt_dir / "qa.yaml")
    engine = LLMEngine(
        StubBackend(),
        LLMCache(None),
        EngineSettings(model="gpt-4o-mini"),
        DEFAULT_PRICES,
        ledger=SpendLedger(tmp_path / "l.sqlite"),
    )
    res = engine.run("s", "b", [LLMRequest(item_id="a", prompt=qa, variables={"text": "x"})])
    assert res[0].ok and res[0].tokens_in > 0 and res[0].cost_usd == 0.0
    assert engine.stats()["cost_usd"] == 0.0
    ledger = read_ledger(tmp_path / "l.sqlite")
    assert ledger["backend"].tolist() == ["stub"] and ledger["cost_usd"].tolist() == [0.0]


def test_a_refusal_is_a_billed_reply(llm_double, llm_double_resource, prompt_dir, tmp_path):
    body = {
        "id": "chatcmpl-r",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": None, "refusal": "I can't help with that."},
            }
        ],
        "usage": {"prompt_tokens": 40, "completion_tokens": 7, "total_tokens": 47},
    }
    llm_double.script(Reply(raw_body=json.dumps(body)))
    engine = llm_double_resource(
        model="gpt-4o-mini", prices=DEFAULT_PRICES, ledger_path=str(tmp_path / "l.sqlite")
    ).engine()
    [r] = engine.run(
        "s", "b", [LLMRequest(item_id="a", prompt=load_prompt(prompt_dir / "qa.yaml"), variables={"text": "x"})]
    )
    assert not r.ok and r.error_class == "Backend:empty" and "refusal" in r.error
    [row] = read_ledger(tmp_path / "l.sqlite").to_dict("records")
    cost = (40 * PRICE["input"] + 7 * PRICE["output"]) / 1e6
    assert row["status"] == "empty" and row["tokens_in"] == 40 and row["cost_usd"] == pytest.approx(cost)
    assert engine.calls_frame()["cost_usd"].sum() == pytest.approx(cost)
