"""Prompt files, the offline stub, the cache across processes, the outdated-prompt check."""

from __future__ import annotations

import multiprocessing as mp

import jsonschema
import pandas as pd
import pytest

from forge.llm import EngineSettings, LLMCache, LLMEngine, LLMRequest, StubBackend, load_prompt, prompt_files_hash
from forge.llm.prompts import PromptError
from forge.llm.stub import placeholder

SCHEMAS = [
    {
        "type": "object",
        "required": ["a", "b", "c"],
        "additionalProperties": False,
        "properties": {
            "a": {"enum": ["x", "y"]},
            "b": {
                "type": "array",
                "minItems": 3,
                "maxItems": 4,
                "items": {"type": "integer", "minimum": 5, "maximum": 6},
            },
            "c": {"type": "string", "minLength": 40},
            "d": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 1},
        },
    },
    {
        "type": "object",
        "required": ["items"],
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/qa"}, "minItems": 2}},
        "$defs": {
            "qa": {
                "type": "object",
                "required": ["q", "ok"],
                "properties": {"q": {"type": "string", "maxLength": 5}, "ok": {"type": "boolean"}},
            }
        },
    },
    {
        "type": "object",
        "required": ["v"],
        "properties": {"v": {"anyOf": [{"type": "null"}, {"const": 3}]}, "w": {"type": "string", "format": "date"}},
    },
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_stub_placeholders_validate_and_are_deterministic(schema):
    for seed in ("a", "b", "c"):
        jsonschema.validate(placeholder(schema, seed), schema)
    assert placeholder(schema, "a") == placeholder(schema, "a")


def test_stub_engine_marks_backend_and_validates(prompt_dir):
    qa = load_prompt(prompt_dir / "qa.yaml")
    engine = LLMEngine(StubBackend(), LLMCache(None), EngineSettings(model="m"))
    res = engine.run("s", "b", [LLMRequest(item_id=str(i), prompt=qa, variables={"text": str(i)}) for i in range(5)])
    for r in res:
        assert r.ok and r.backend == "stub"
        jsonschema.validate(r.data, qa.schema)
    assert set(engine.calls_frame()["backend"]) == {"stub"}


def test_auto_backend_resolution(monkeypatch, tmp_path):
    from resources.llm import LLMResource

    assert LLMResource(cache_path=str(tmp_path / "c.sqlite")).engine().backend_name == "stub"
    assert (
        LLMResource(base_url="http://127.0.0.1:1/v1", cache_path=str(tmp_path / "c.sqlite")).engine().backend_name
        == "openai"
    )
    assert LLMResource(backend="stub", api_key="k").resolved_backend() == "stub"


def test_prompt_rendering_and_errors(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("name: p\nvariables: [a]\nuser: 'x {{ a }} y'\n")
    prompt = load_prompt(p)
    assert prompt.render({"a": {"k": 1}})[-1]["content"] == 'x {"k": 1} y'
    with pytest.raises(PromptError, match="missing"):
        prompt.render({})
    h1, ph1 = prompt.hash, prompt_files_hash([p])
    p.write_text("name: p\nvariables: [a]\nuser: 'x {{ a }} z'\n")
    assert load_prompt(p).hash != h1 and prompt_files_hash([p]) != ph1
    p.write_text("name: p\nuser: '{{undeclared}}'\n")
    with pytest.raises(PromptError, match="not declared"):
        load_prompt(p)
    p.write_text("name: p\nuser: u\nschema: {type: objekt}\n")
    with pytest.raises(PromptError, match="invalid schema"):
        load_prompt(p)


def _writer(path: str, start: int, n: int) -> None:
    cache = LLMCache(path, busy_timeout_s=30)
    for i in range(start, start + n):
        cache.put(f"k{i}", {"data": {"i": i}, "text": str(i)}, model="m", prompt_name="p")
        assert cache.get(f"k{i}")["data"]["i"] == i


def test_cache_safe_with_several_processes(tmp_path):
    path = str(tmp_path / "cache.sqlite")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, k * 200, 200)) for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    cache = LLMCache(path)
    assert len(cache) == 600 and cache.get("k599")["data"] == {"i": 599}


def test_outdated_prompt_count(prompt_dir):
    from assets.llm_support import count_outdated, current_prompt_hashes

    qa = load_prompt(prompt_dir / "qa.yaml")
    current = current_prompt_hashes([qa])
    df = pd.DataFrame({"prompt_name": ["qa", "qa", "qa"], "prompt_hash": [qa.hash, qa.hash, "old"]})
    assert count_outdated(df, current) == (1, {"qa": 1})
    (prompt_dir / "qa.yaml").write_text((prompt_dir / "qa.yaml").read_text() + "\n# edited\n")
    assert count_outdated(df, current_prompt_hashes([qa]))[0] == 3  # re-read from the file: all outdated now


def test_engine_logs_request_progress(prompt_dir, caplog, monkeypatch):
    import logging

    import forge.llm.progress as eng

    monkeypatch.setattr(eng._Progress.__init__, "__defaults__", (0.0,))  # log every request
    qa = load_prompt(prompt_dir / "qa.yaml")
    engine = LLMEngine(StubBackend(), LLMCache(None), EngineSettings(model="m"))
    with caplog.at_level(logging.INFO, logger="subtext_forge.llm"):
        engine.run(
            "stage_x", "b1", [LLMRequest(item_id=str(i), prompt=qa, variables={"text": str(i)}) for i in range(3)]
        )
    lines = [r.getMessage() for r in caplog.records if r.name == "subtext_forge.llm"]
    assert lines and lines[-1].startswith("stage_x b1: 3/3 LLM requests")
