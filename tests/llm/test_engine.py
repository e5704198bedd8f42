"""The engine through the real openai client against the OpenAI-compatible double."""

from __future__ import annotations

import base64
import io
import json
import time

from PIL import Image

from forge.llm import ImageInput, LLMRequest, load_prompt
from tests.llm_double import Reply

GOOD = {"question": "Is the speaker sincere?", "label": "irony", "n": 2}


def reqs(prompt, n, prefix="t"):
    return [
        LLMRequest(item_id=f"{prefix}{i}", prompt=prompt, variables={"text": f"{prefix} text {i}"}) for i in range(n)
    ]


def test_success_and_rows(llm_double, llm_double_resource, prompt_dir):
    llm_double.script(Reply.json(GOOD))
    engine = llm_double_resource(prices={"double-model": {"input": 1.0, "output": 2.0}}).engine()
    qa = load_prompt(prompt_dir / "qa.yaml")
    [res] = engine.run("gen", "b-0001", reqs(qa, 1))
    assert res.ok and res.data == GOOD and res.backend == "openai" and not res.cached
    assert res.prompt_hash == qa.hash and res.model == "double-model" and res.tokens_in > 0
    body = llm_double.chat_requests[0]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "qa"
    assert body["temperature"] == 0.2
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]  # few-shot turn rendered
    df = engine.calls_frame()
    assert list(df["outcome"]) == ["ok"] and df["cost_usd"].iloc[0] > 0
    assert df["partition"].iloc[0] == "b-0001" and df["prompt_name"].iloc[0] == "qa"


def test_rerun_is_fully_cached_and_prompt_edit_recalls_only_that_prompt(llm_double, llm_double_resource, prompt_dir):
    qa, judge = load_prompt(prompt_dir / "qa.yaml"), load_prompt(prompt_dir / "judge.yaml")
    batch = reqs(qa, 5) + [LLMRequest(item_id=f"j{i}", prompt=judge, variables={"question": f"q{i}"}) for i in range(4)]
    res = llm_double_resource().engine().run("gen", "b", batch)
    assert all(r.ok for r in res) and len(llm_double.chat_requests) == 9

    engine = llm_double_resource().engine()  # a new engine (new process would be the same): same cache file
    again = engine.run("gen", "b", batch)
    assert len(llm_double.chat_requests) == 9, "an unchanged re-run must make zero calls"
    assert all(r.cached for r in again) and [r.data for r in again] == [r.data for r in res]
    assert engine.stats()["calls"] == 0 and engine.stats()["cache_hits"] == 9

    (prompt_dir / "judge.yaml").write_text(
        (prompt_dir / "judge.yaml").read_text().replace("You review", "You strictly review")
    )
    judge2 = load_prompt(prompt_dir / "judge.yaml")
    assert judge2.hash != judge.hash
    batch2 = reqs(qa, 5) + [
        LLMRequest(item_id=f"j{i}", prompt=judge2, variables={"question": f"q{i}"}) for i in range(4)
    ]
    third = llm_double_resource().engine().run("gen", "b", batch2)
    new = llm_double.chat_requests[9:]
    assert len(new) == 4 and all(b["response_format"]["json_schema"]["name"] == "judge" for b in new)
    assert [r.cached for r in third] == [True] * 5 + [False] * 4
    assert all(r.prompt_hash == judge2.hash for r in third[5:])


def test_429_retry_after_is_honoured(llm_double, llm_double_resource, prompt_dir):
    llm_double.script(Reply.rate_limited(retry_after=0.6), Reply.json(GOOD))
    engine = llm_double_resource(backoff_base_s=0.01).engine()
    t0 = time.perf_counter()
    [res] = engine.run("gen", "b", reqs(load_prompt(prompt_dir / "qa.yaml"), 1))
    elapsed = time.perf_counter() - t0
    assert res.ok and res.attempts == 2
    assert elapsed >= 0.6, f"retried after {elapsed:.2f}s, before the 0.6 s retry-after"
    assert list(engine.calls_frame()["outcome"]) == ["retry", "ok"]
    times = [r["t"] for r in llm_double.requests]
    assert times[1] - times[0] >= 0.55


def test_500_and_timeout_are_retried(llm_double, llm_double_resource, prompt_dir):
    qa = load_prompt(prompt_dir / "qa.yaml")
    llm_double.script(Reply.error(500), Reply.timeout(3.0), Reply.json(GOOD))
    engine = llm_double_resource(backoff_base_s=0.01, timeout_s=0.5).engine()
    [res] = engine.run("gen", "b", reqs(qa, 1))
    assert res.ok and res.data == GOOD and res.attempts == 3
    df = engine.calls_frame()
    assert list(df["outcome"]) == ["retry", "retry", "ok"]
    assert list(df["error_class"][:2]) == ["Backend:server", "Backend:timeout"]


def test_retries_are_bounded_and_failure_is_isolated(llm_double, llm_double_resource, prompt_dir):
    qa = load_prompt(prompt_dir / "qa.yaml")
    llm_double.script(*[Reply.error(503)] * 3, match="bad")
    engine = llm_double_resource(backoff_base_s=0.01, max_retries=2).engine()
    batch = reqs(qa, 3) + [LLMRequest(item_id="x", prompt=qa, variables={"text": "bad"})]
    res = engine.run("gen", "b", batch)
    assert [r.ok for r in res] == [True, True, True, False]
    assert res[3].error_class == "Backend:server" and "503" in res[3].error and res[3].data is None
    assert res[3].attempts == 3


def test_connection_error_is_retried_then_reported(llm_double_resource, prompt_dir, tmp_path):
    qa = load_prompt(prompt_dir / "qa.yaml")
    res = (
        llm_double_resource(base_url="http://127.0.0.1:9/v1", backoff_base_s=0.01, max_retries=1)
        .engine()
        .run("gen", "b", reqs(qa, 1))
    )
    assert not res[0].ok and res[0].error_class == "Backend:connection" and res[0].attempts == 2


def test_malformed_json_is_repaired_with_its_error_shown(llm_double, llm_double_resource, prompt_dir):
    llm_double.script(Reply.text('{"question": "Is it"'), Reply.json(GOOD))
    engine = llm_double_resource().engine()
    [res] = engine.run("gen", "b", reqs(load_prompt(prompt_dir / "qa.yaml"), 1))
    assert res.ok and res.data == GOOD and res.attempts == 2
    repair = llm_double.chat_requests[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"question": "Is it"'}
    assert "invalid JSON" in repair[-1]["content"]
    assert list(engine.calls_frame()["outcome"]) == ["invalid", "ok"]


def test_schema_violation_past_its_repair_budget_is_rejected_with_reason_and_not_cached(
    llm_double, llm_double_resource, prompt_dir
):
    bad = {"question": "Why?", "label": "sarcasm", "n": 2}
    llm_double.script(*[Reply.json(bad)] * 4)  # the first reply + 3 repairs (default SchemaError budget)
    qa = load_prompt(prompt_dir / "qa.yaml")
    [res] = llm_double_resource().engine().run("gen", "b", reqs(qa, 1))
    assert not res.ok and res.data is None and res.error_class == "SchemaError" and res.attempts == 4
    assert "schema" in res.error and "after repair" in res.error and res.text  # the raw reply kept for inspection
    repair = llm_double.chat_requests[3]["messages"]
    assert "schema:" in repair[-1]["content"]
    assert sum(m["role"] == "assistant" for m in repair) == 2  # the few-shot turn + only the latest bad reply
    [again] = llm_double_resource().engine().run("gen", "b", reqs(qa, 1))
    assert again.ok and not again.cached and len(llm_double.chat_requests) == 5  # failures never cached


def test_repair_budget_per_class_is_configurable(llm_double, llm_double_resource, prompt_dir):
    bad = {"question": "Why?", "label": "sarcasm", "n": 2}
    llm_double.script(Reply.json(bad), Reply.text("{nope"), Reply.json(bad))
    qa = load_prompt(prompt_dir / "qa.yaml")
    engine = llm_double_resource(repair_budgets={"SchemaError": 1, "JSONDecodeError": 1}).engine()
    [res] = engine.run("gen", "b", reqs(qa, 1))
    assert not res.ok and res.error_class == "SchemaError" and res.attempts == 3
    assert list(engine.calls_frame()["outcome"]) == ["invalid", "invalid", "failed"]


def test_json_object_fallback_when_json_schema_unsupported(llm_double, llm_double_resource, prompt_dir):
    llm_double.supports_json_schema = False
    llm_double.responder = lambda body: Reply.json(GOOD)
    engine = llm_double_resource().engine()
    res = engine.run("gen", "b", reqs(load_prompt(prompt_dir / "qa.yaml"), 2))
    assert all(r.ok for r in res)
    modes = [b["response_format"]["type"] for b in llm_double.chat_requests]
    assert modes[0] == "json_schema" and modes[-1] == "json_object"
    sent = [b for b in llm_double.chat_requests if b["response_format"]["type"] == "json_object"][0]
    assert '"required"' in sent["messages"][0]["content"]  # the schema is spelled out for the model


def test_concurrency_bound_is_honoured(llm_double, llm_double_resource, prompt_dir):
    llm_double.latency = 0.05
    engine = llm_double_resource(max_concurrency=4).engine()
    res = engine.run("gen", "b", reqs(load_prompt(prompt_dir / "qa.yaml"), 24))
    assert all(r.ok for r in res)
    assert llm_double.max_in_flight == 4


def test_rate_limit_headers_pause_callers(llm_double, llm_double_resource, prompt_dir):
    llm_double.rate_headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "400ms"}
    engine = llm_double_resource(max_concurrency=1).engine()
    t0 = time.perf_counter()
    res = engine.run("gen", "b", reqs(load_prompt(prompt_dir / "qa.yaml"), 3))
    assert all(r.ok for r in res)
    assert time.perf_counter() - t0 >= 0.8  # two waits for the announced reset


def test_images_sent_as_resized_jpeg_data_urls(llm_double, llm_double_resource, tmp_path):
    (tmp_path / "v.yaml").write_text("name: vis\nuser: Describe the frames.\n")
    vis = load_prompt(tmp_path / "v.yaml")
    path = tmp_path / "big.png"
    Image.new("RGB", (1600, 900), (200, 10, 10)).save(path)
    buf = io.BytesIO()
    Image.new("RGB", (300, 300), (0, 0, 200)).save(buf, format="PNG")
    req = LLMRequest(item_id="c1", prompt=vis, images=[ImageInput(path=path), ImageInput(data=buf.getvalue())])
    engine = llm_double_resource(image_max_side=512, image_quality=70).engine()
    [res] = engine.run("cap", "b", [req])
    assert res.ok and res.data == {"text": "ok"}
    content = llm_double.chat_requests[0]["messages"][-1]["content"]
    urls = [p["image_url"]["url"] for p in content if p["type"] == "image_url"]
    assert len(urls) == 2 and all(u.startswith("data:image/jpeg;base64,") for u in urls)
    first = Image.open(io.BytesIO(base64.b64decode(urls[0].split(",", 1)[1])))
    assert first.format == "JPEG" and max(first.size) == 512
    # Same image content under another path: same cache key, no new call.
    path.rename(tmp_path / "renamed.png")
    req2 = LLMRequest(
        item_id="c1", prompt=vis, images=[ImageInput(path=tmp_path / "renamed.png"), ImageInput(data=buf.getvalue())]
    )
    [again] = llm_double_resource(image_max_side=512, image_quality=70).engine().run("cap", "b", [req2])
    assert again.cached and len(llm_double.chat_requests) == 1


def test_per_stage_override_of_model_and_params(llm_double, llm_double_resource, prompt_dir):
    engine = llm_double_resource(
        stage_overrides={"judge_stage": {"model": "big-model", "params": {"temperature": 0.0}}}
    ).engine()
    qa = load_prompt(prompt_dir / "qa.yaml")
    engine.run("gen", "b", reqs(qa, 1))
    engine.run("judge_stage", "b", reqs(qa, 1))
    a, b = llm_double.chat_requests
    assert (a["model"], a["temperature"]) == ("double-model", 0.2)
    assert (b["model"], b["temperature"]) == ("big-model", 0.0)


def test_missing_variable_fails_only_that_item(llm_double, llm_double_resource, prompt_dir):
    qa = load_prompt(prompt_dir / "qa.yaml")
    res = llm_double_resource().engine().run("gen", "b", reqs(qa, 2) + [LLMRequest(item_id="z", prompt=qa)])
    assert [r.ok for r in res] == [True, True, False] and "text" in res[2].error


def test_secrets_never_in_calls_frame_or_metadata(llm_double, llm_double_resource, prompt_dir, tmp_path):
    from assets.llm_support import record_llm_calls
    from forge.storage import TableStore

    resource = llm_double_resource()
    engine = resource.engine()
    engine.run("gen", "b", reqs(load_prompt(prompt_dir / "qa.yaml"), 2))
    assert llm_double.requests[0]["headers"]["authorization"] == "Bearer sk-test-double-secret"
    store = TableStore(tmp_path / "data")
    md = record_llm_calls(store, engine)
    blob = (
        engine.calls_frame().to_json(date_format="iso")
        + json.dumps({k: str(v) for k, v in md.items()})
        + json.dumps(resource.describe())
    )
    blob += store.read("llm_calls").to_json(date_format="iso")
    assert "sk-test-double-secret" not in blob
    assert md["llm_calls"] == 2 and md["llm_backend"] == "openai"
    assert store.parts("llm_calls") == ["gen__b"]


def test_a_responder_that_raises_answers_500_and_is_kept_for_the_fixture_to_fail_on():
    """A test's broken responder is not a silent retry: the double answers 500 and keeps the error,
    which the ``llm_double`` fixture turns into a failure of the test (tests/conftest.py)."""
    import requests

    from tests.llm_double import LLMDouble

    def broken(body):
        raise AssertionError("out of scripted words")

    with LLMDouble() as double:
        double.responder = broken
        r = requests.post(f"{double.base_url}/chat/completions", json={"model": "m", "messages": []}, timeout=10)
    assert r.status_code == 500
    assert double.responder_errors == ["AssertionError: out of scripted words"]
