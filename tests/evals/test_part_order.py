"""Each benchmark's requests send their image and text parts in the order of the paper's official
script (``EvalSpec.part_order``, read from the file it names; docs/evals.md "Order of parts"):
one request per benchmark is built by its own request builder, prepared by the engine and laid
out as it goes on the wire; the cache key changes with the order."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from forge.benchmarks.registry import get
from forge.benchmarks.spec import ImagePlacement
from forge.evals import requests as rq
from forge.evals.config import ModelSpec, benchmark_block, load_eval_config, settings_for
from forge.evals.pipeline import prompt_files
from forge.llm.backends import StubBackend
from forge.llm.cache import LLMCache
from forge.llm.engine import LLMEngine
from forge.llm.prompts import load_prompt
from forge.llm.settings import EngineSettings
from forge.llm.types import LLMRequest

ROOT = Path(__file__).resolve().parents[2]
OPTS6 = [f"A reading number {k} of the picture." for k in range(1, 7)]
# one item per benchmark, in the shape its items table has, and the setting it is asked under
ITEMS = {
    "iibench": ("none", {"task": "mcq", "category": "life", "question": "What does it imply?", "options": OPTS6}),
    "hummus": (
        "multimodal",
        {
            "task": "classification",
            "category": "classification",
            "question": "Caption: A caption.\n\nDoes the humor involve metaphor use? Answer the question with Yes or No.",
            "options": ["Yes", "No"],
        },
    ),
    "vimu": (
        "unguided",
        {"task": "open_ended", "category": "OE", "question": "What is the video mocking?", "options": None},
    ),
    "maia": (
        "1_frame",
        {
            "task": "statement_verification",
            "category": "causal",
            "question": "Perché la donna ride?",
            "options": ["La donna ride perché il cane salta.", "La donna ride perché il gatto dorme."],
        },
    ),
    "vague": (
        "VLM",
        {"task": "mcq", "category": "FS", "question": "It is cold in here.", "options": OPTS6[:4]},
    ),
}


def _jpeg(path: Path) -> Path:
    buf = io.BytesIO()
    Image.new("RGB", (32, 24), (200, 10, 10)).save(buf, format="JPEG")
    path.write_bytes(buf.getvalue())
    return path


def _request(name: str, tmp_path: Path, setting_name: str | None = None) -> tuple[LLMRequest, str]:
    spec = get(name)
    cfg = load_eval_config()
    default_setting, fields = ITEMS[name]
    setting = next(s for s in settings_for(cfg, spec) if s.name == (setting_name or default_setting))
    _jpeg(tmp_path / "f1.jpg")
    _jpeg(tmp_path / "f2.jpg")
    item = {
        "item_id": f"{name}-1",
        "answer": "A",
        "media_paths": ["f1.jpg", "f2.jpg"],
        "labels": json.dumps({"subject": "the listener"}),
        "extra": json.dumps({"transcript": "Some words.", "prompts": {"unguided": "A prompt."}}),
        "references": None,
        **fields,
    }
    prompts = {p.name: load_prompt(p) for p in prompt_files(spec, cfg)}
    for task, fname in (benchmark_block(cfg, spec).get("prompts") or {}).items():
        prompts[f"task:{task}"] = prompts[fname]
    model = ModelSpec(name="m", model="m", accepts="frames")
    reqs, skipped = rq.build_requests(spec, setting, [item], prompts, model, tmp_path)
    assert not skipped and len(reqs) == 1, skipped
    return reqs[0].request, setting.name


def _engine() -> LLMEngine:
    return LLMEngine(StubBackend(), LLMCache(None), EngineSettings(model="m"))


def _kinds(content: list[dict]) -> list[str]:
    return ["image" if p["type"] == "image_url" else "text" for p in content]


@pytest.mark.parametrize("name", sorted(ITEMS))
def test_request_parts_in_the_declared_official_order(name, tmp_path):
    req, setting = _request(name, tmp_path)
    order = get(name).eval.order_for(setting)
    assert order is not None and order.source  # every benchmark declares its order and its source
    assert req.images, "the setting sends images"
    engine = _engine()
    wire = engine._wire_messages(engine.prepare("eval", req), [])
    user = [m for m in wire if m["role"] == "user"][-1]["content"]
    n = len(req.images)
    want = ["image"] * n + ["text"] if order.images == ImagePlacement.BEFORE_TEXT else ["text"] + ["image"] * n
    assert _kinds(user) == want
    # Prompt.render with images lays the parts out the same way
    rendered = req.prompt.render(req.variables, req.images, req.images_first)[-1]["content"]
    assert _kinds(rendered) == want


def test_declared_orders_are_the_official_scripts():
    # read from each paper's official code (docs/evals.md names the file)
    assert get("hummus").eval.order_for("multimodal").images == ImagePlacement.BEFORE_TEXT
    assert get("hummus").eval.order_for("clas_a_or_b").source.endswith("a_or_b.py query_answer")
    assert get("maia").eval.order_for("32_frames").images == ImagePlacement.BEFORE_TEXT
    for name in ("iibench", "vimu", "vague"):
        assert get(name).eval.order_for("any").images == ImagePlacement.AFTER_TEXT


def test_docs_name_the_source_of_every_order():
    docs = (ROOT / "docs" / "evals.md").read_text(encoding="utf-8")
    for name in ITEMS:
        for order in get(name).eval.part_order.values():
            assert order.source in docs, (name, order.source)


def test_cache_key_changes_with_the_order(tmp_path):
    req, _ = _request("hummus", tmp_path)
    engine = _engine()
    first = engine.prepare("eval", req).key
    after = engine.prepare("eval", LLMRequest(req.item_id, req.prompt, req.variables, req.images)).key
    assert req.images_first and first != after  # no reply to the other order is reused
    # a text-only request has no order to key on: its key is the same either way
    text = LLMRequest("t", req.prompt, req.variables, images_first=True)
    assert engine.prepare("eval", text).key == engine.prepare("eval", LLMRequest("t", req.prompt, req.variables)).key
