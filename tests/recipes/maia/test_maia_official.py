"""MAIA against its official repository (Caput97/MAIA-Multimodal_AI_Assessment): the prompts
eval_model.py sends (PROMPT_MC, PROMPT_GEN), byte for byte, frames first; the A/B reading of
compute_mc_scores.py on an exact-shape results.jsonl fixture (eval_model.py's output for the `mc`
config; content our own); the judge's texts and inputs of compute_llm-as-a-judge.py.
The official texts below are rebuilt from the rule each script states (docs/evals.md "MAIA")."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from assets.recipes.maia.logic.evaluation import extract_maia_ab
from forge.benchmarks.registry import get
from forge.evals import requests as rq
from forge.evals.config import ModelSpec, benchmark_block, load_eval_config, settings_for
from forge.evals.extract import extract_choice
from forge.evals.pipeline import prompt_files
from forge.evals.scoring import judge_requests, unparseable_open_ended
from forge.llm.backends import StubBackend
from forge.llm.cache import LLMCache
from forge.llm.engine import LLMEngine
from forge.llm.prompts import load_prompt
from forge.llm.settings import EngineSettings
from forge.llm.types import LLMResult

FIXTURE = Path(__file__).parent / "fixtures" / "official" / "mc_results.jsonl"
ROWS = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]


def official_mc(first: str, second: str) -> str:
    """eval_model.py PROMPT_MC with its two slots filled by answer1 and answer2."""
    return "Scegli la descrizione corretta:\nA. " + first + "\nB. " + second + "\nRispondi solo A o B\n"


def official_gen(question: str) -> str:
    """eval_model.py PROMPT_GEN with its slot filled by the question."""
    return "Answer with a single sentence the following question related to the video in Italian:\n" + question


def official_judge(question: str, candidate: str, refs: list[str]) -> tuple[str, str]:
    """compute_llm-as-a-judge.py llm_judge: the system text, and the user text with R1..R8."""
    system = (
        "You are an assistant that evaluates the correctness of a candidate answer based on a set of 8 "
        "reference answers. A is considered correct if it aligns with at least one reference answer. "
        "Return exactly one label: Correct or Incorrect."
    )
    refs = (refs + [""] * 8)[:8]
    lines = "\n".join(f"R{k}: {r}" for k, r in enumerate(refs, start=1))
    return system, f"Question: {question}\nCandidate Answer: {candidate}\n{lines}"


def _jpeg(path: Path) -> None:
    buf = io.BytesIO()
    Image.new("RGB", (32, 24), (10, 120, 10)).save(buf, format="JPEG")
    path.write_bytes(buf.getvalue())


def _item(k: int, task: str, **fields) -> dict:
    return {
        "item_id": f"maia-{k}",
        "task": task,
        "category": "causal",
        "source_item_id": "v01",
        "media_paths": ["f1.jpg", "f2.jpg"],
        "labels": json.dumps({"question_id": "q1"}),
        "extra": "{}",
        "references": None,
        **fields,
    }


def _requests(items: list[dict], tmp_path: Path, setting_name: str = "32_frames"):
    spec, cfg = get("maia"), load_eval_config()
    setting = next(s for s in settings_for(cfg, spec) if s.name == setting_name)
    _jpeg(tmp_path / "f1.jpg")
    _jpeg(tmp_path / "f2.jpg")
    prompts = {p.name: load_prompt(p) for p in prompt_files(spec, cfg)}
    for task, fname in (benchmark_block(cfg, spec).get("prompts") or {}).items():
        prompts[f"task:{task}"] = prompts[fname]
    reqs, skipped = rq.build_requests(
        spec, setting, items, prompts, ModelSpec(name="m", model="m", accepts="frames"), tmp_path
    )
    assert not skipped and len(reqs) == len(items)
    return setting, reqs


def _wire_user(req) -> list[dict]:
    engine = LLMEngine(StubBackend(), LLMCache(None), EngineSettings(model="m"))
    wire = engine._wire_messages(engine.prepare("eval", req), [])
    return [m for m in wire if m["role"] == "user"][-1]["content"]


def test_requests_are_the_official_prompts_byte_for_byte_frames_first(tmp_path):
    mc = [
        _item(k, "statement_verification", options=[r["answer1"], r["answer2"]], answer="AB"[r["target"]])
        for k, r in enumerate(ROWS[:2])
    ]
    question = "Perché il cuoco usa la pala?"
    gen = _item(9, "open_ended", question=question, answer="", references=["Per infornare la pizza."])
    _, reqs = _requests([*mc, gen], tmp_path)
    for er, row in zip(reqs[:2], ROWS[:2]):
        user = _wire_user(er.request)
        frames = ["image_url"] * len(er.request.images)
        assert frames and [p["type"] for p in user] == [*frames, "text"]  # vllm_engine.py: frames, then text
        assert user[-1]["text"] == official_mc(row["answer1"], row["answer2"])
    user = _wire_user(reqs[2].request)
    assert [p["type"] for p in user] == ["image_url"] * len(reqs[2].request.images) + ["text"]
    assert user[-1]["text"] == official_gen(question)


# compute_mc_scores.py: the first standalone capital A or B; nothing else is read
CASES = [
    ("A", "A"),
    ("B", "B"),
    ("(B)", "B"),
    ("B.", "B"),
    ("Risposta: A", "A"),
    ("B, ma anche A è plausibile.", "B"),
    ("A e B", "A"),
    ("La descrizione corretta è la B.", "B"),
    ("a", None),
    ("b)", None),
    ("AB", None),
    ("", None),
    ("C", None),
    ("Answer: B", "B"),
]


@pytest.mark.parametrize("reply,label", CASES)
def test_official_ab_reading(reply, label):
    e = extract_maia_ab(reply)
    assert (e.letters[0] if e.ok else None) == label


def _accuracy(tmp_path: Path, scoring: dict) -> float:
    items = [
        _item(k, "statement_verification", options=[r["answer1"], r["answer2"]], answer="AB"[r["target"]])
        for k, r in enumerate(ROWS)
    ]
    setting, reqs = _requests(items, tmp_path)
    results = [
        LLMResult(
            item_id=er.request.item_id,
            ok=True,
            data={"text": r["model_generation"]},
            text=r["model_generation"],
            error=None,
            error_class=None,
            prompt_name="p",
            prompt_hash="h",
            model="m",
            backend="openai",
            cached=False,
            attempts=1,
        )
        for er, r in zip(reqs, ROWS)
    ]
    rows = rq.prediction_rows("m", get("maia"), setting, {}, reqs, results, scoring)
    return sum(float(r["score"] or 0.0) for r in rows) / len(rows)


def test_statement_accuracy_is_the_official_scripts_on_its_results_shape(tmp_path):
    # hand count by compute_mc_scores.py's rule (target 0 = A): rows 1, 2, 3, 5, 9 are right
    assert _accuracy(tmp_path, {}) == pytest.approx(5 / 10)
    # the project's marker reader (option maia_marker_extraction) reads these replies otherwise
    assert _accuracy(tmp_path, {"maia_marker_extraction": True}) != pytest.approx(5 / 10)
    assert not extract_choice("B, ma anche A è plausibile.", ["x", "y"]).ok  # the old rule: ambiguous


def test_judge_is_the_official_text_and_sees_every_reply_as_generated():
    spec = get("maia")
    prompt = load_prompt(spec.eval.prompts_dir / spec.eval.judge_prompt)
    refs = ["Per infornare la pizza.", "Per mettere la pizza nel forno."]
    item = {"item_id": "i1", "question": "Perché il cuoco usa la pala?", "references": refs}
    rows = [
        {
            "task": "open_ended",
            "setting": "32_frames",
            "item_id": "i1",
            "status": status,
            "raw_reply": raw,
            "parsed": None,
        }
        for status, raw in (("ok", "Per infornare la pizza, credo.\n"), ("unparseable", ""))
    ]
    pairs = judge_requests(spec, rows, {"i1": item}, prompt)
    assert [i for i, _ in pairs] == [0, 1]  # the empty reply is judged too, as the official script does
    unparseable_open_ended(spec, rows)
    assert rows[1].get("score") is None  # not scored 0 before its judgement
    for (_, req), row in zip(pairs, rows):
        msgs = req.prompt.render(req.variables)
        assert (msgs[0]["role"], msgs[1]["role"]) == ("system", "user")
        assert (msgs[0]["content"], msgs[1]["content"]) == official_judge(item["question"], row["raw_reply"], refs)
        assert req.params.get("temperature") == 0


def test_a_changed_prompt_changes_the_cache_key(tmp_path):
    _, reqs = _requests([_item(0, "statement_verification", options=["x uno", "y due"], answer="A")], tmp_path)
    engine = LLMEngine(StubBackend(), LLMCache(None), EngineSettings(model="m"))
    req = reqs[0].request
    other = load_prompt(get("maia").eval.prompts_dir / "maia_sv.yaml")
    assert req.prompt.hash != other.hash
    changed = type(req)(req.item_id, other, req.variables, req.images, req.images_first)
    assert engine.prepare("eval", req).key != engine.prepare("eval", changed).key
