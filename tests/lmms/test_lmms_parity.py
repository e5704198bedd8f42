"""lmms-eval's own command line on the task folders the exports write: the same replies give the
same per-item scores as the project's ``<paper>_eval`` for every closed setting of all five
benchmarks (MCQ, statement verification, Yes/No, A/B, multi-select).

One loopback OpenAI-protocol server (tests/llm_double) answers both paths with a reply chosen by
the prompt's text, from the reply forms the papers' readers tell apart (right, wrong, prose,
JSON, empty, unreadable). One lmms-eval run covers every closed task of the five exports; its
``--log_samples`` output is compared item by item with ``prediction_rows`` of ``evaluate``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from forge.benchmarks.registry import get
from forge.evals.config import ModelSpec, benchmark_block
from forge.evals.lmms_task import PAPER_LINE
from forge.evals.pipeline import evaluate, load_export, model_engine
from forge.export.lmms import FOLDER
from tests.evals.test_e2e import build_items, dev_items, publish_items
from tests.llm_double import Reply
from tests.llm_double.server import message_text

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("SUBTEXT_LMMS_VENV") or ROOT / ".venv-lmms")
BENCHES = ("iibench", "vimu", "vague", "maia", "hummus")
# reply forms: the right and wrong letters in several spellings, a JSON selection (ViMU's official
# form), prose, Yes/No words, empty and unreadable replies
REPLIES = (
    "Answer: (A)",
    "(B)",
    "C",
    "The answer is D.",
    '{"selected_options": ["A", "C"]}',
    '{"selected_options": ["B"]}',
    '{"selected_options": ["D", "E"]}',
    "Yes",
    "No",
    "A",
    "B",
    "",
    "I cannot tell from the picture.",
    "Answer: (F)",
    "answer2: B",
)


def reply_for(body: dict) -> Reply:
    text = message_text(body)
    k = int(hashlib.sha1(text.encode()).hexdigest(), 16) % len(REPLIES)
    return Reply.text(REPLIES[k])


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("lmms-data")
    items = build_items(data)
    for b in BENCHES:
        publish_items(data, b, items[b], dev_items(data) if b == "iibench" else None)
    return data


def _closed_tasks(data: Path) -> dict[str, tuple[str, str]]:
    """lmms task name → (benchmark, setting), read from the YAMLs the exports wrote."""
    out = {}
    for b in BENCHES:
        for y in sorted((data / "exports" / b / "v1" / FOLDER).glob("*.yaml")):
            doc = yaml.safe_load(y.read_text().replace("!function ", ""))
            if "group" not in doc and not doc["metadata"]["setting"].endswith(":oe"):
                out[doc["task"]] = (doc["metadata"]["benchmark"], doc["metadata"]["setting"])
    return out


def _project_scores(
    data: Path, double, llm_double_resource, tmp_path, settings: dict[str, set[str]]
) -> tuple[dict[tuple[str, str, str], float], dict[tuple[str, str, str], float]]:
    """(per item, per aggregate metric) of ``evaluate`` on the settings the task folders hold."""
    model = ModelSpec(name="m-forge", model="m-forge", base_url=double.base_url, accepts="frames", max_frames=32)
    engine = model_engine(model, llm_double_resource().settings(), tmp_path / "eval_cache.sqlite")
    out, agg = {}, {}
    for b in BENCHES:
        spec = get(b)
        pub = load_export(data / "exports", spec, "v1")
        cfg = {"benchmarks": {}, "circular": False, "bootstrap": {"n": 10}}  # the paper's settings ...
        block = benchmark_block(cfg, spec)  # ... those the task folder holds (the test's time)
        cfg["benchmarks"][b] = {**block, "settings": [x for x in block["settings"] if x["name"] in settings[b]]}
        preds, scores, _ = evaluate(spec, model, cfg, pub.items, None, data, engine, None)
        for r in preds.to_dict("records"):
            if r["variant"] == 0 and r["score"] is not None and not pd.isna(r["score"]):
                out[(b, r["setting"], r["item_id"])] = float(r["score"])
        for r in scores[scores["slice"] == "all"].to_dict("records"):
            agg[(b, r["setting"], r["metric"])] = float(r["value"])
    return out, agg


def _lmms_scores(
    data: Path, double, tasks: list[str], out: Path
) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str, str], float]]:
    """(per task and item from --log_samples, the paper aggregates the tasks printed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SUBTEXT_FORGE_ROOT", "HF_", "PYTHON"))}
    env |= {"HF_HOME": str(out / "hf"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
    cmd = [
        str(VENV / "bin" / "lmms-eval"),
        "--model",
        "openai",
        "--model_args",
        f"model=m-lmms,base_url={double.base_url},api_key=sk-loopback,num_concurrent=8,max_retries=1",
        "--include_path",
        "exports",
        "--tasks",
        ",".join(tasks),
        "--log_samples",
        "--output_path",
        str(out / "results"),
    ]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=data, env=env, capture_output=True, text=True, timeout=600)
    print(f"lmms-eval: {time.monotonic() - t0:.1f}s")
    assert proc.returncode == 0 and list((out / "results").rglob("*_results.json")), proc.stderr[-4000:]
    scores = {}
    for f in (out / "results").rglob("*_samples_*.jsonl"):
        task = f.name.split("_samples_")[1].removesuffix(".jsonl")
        for line in f.read_text().splitlines():
            s = json.loads(line)
            scores[(task, s["paper"]["item_id"])] = s["score"]  # the row process_results logged
    paper = {}
    for line in proc.stderr.splitlines():
        if line.startswith(PAPER_LINE):
            bench, setting, metric, _, value = line.removeprefix(PAPER_LINE).split(";")[0].split()
            paper[(bench, setting.rstrip(":"), metric)] = float(value)
    return scores, paper


@pytest.mark.skipif(
    os.environ.get("SUBTEXT_SKIP_LMMS_TESTS") == "1", reason="SUBTEXT_SKIP_LMMS_TESTS=1: lmms-eval tests skipped"
)
def test_lmms_eval_scores_equal_project_eval_item_for_item(exports, llm_double, llm_double_resource, tmp_path):
    if not (VENV / "bin" / "lmms-eval").is_file():  # as tests/labelstudio_server.py does for Label Studio
        pytest.skip(
            f"lmms-eval is not installed in {VENV}: run `bash scripts/ensure_lmms.sh` (`make test` does, and "
            "fails when it cannot install; SUBTEXT_SKIP_LMMS_TESTS=1 skips this test on purpose)"
        )
    llm_double.responder = reply_for
    tasks = _closed_tasks(exports)
    assert {b for b, _ in tasks.values()} == set(BENCHES)
    settings = {b: {s for bb, s in tasks.values() if bb == b} for b in BENCHES}
    project, project_agg = _project_scores(exports, llm_double, llm_double_resource, tmp_path, settings)
    project_texts = {message_text(r["body"]) for r in llm_double.requests}
    llm_double.reset()  # clears the responder too
    llm_double.responder = reply_for
    lmms, lmms_agg = _lmms_scores(exports, llm_double, sorted(tasks), tmp_path)

    compared = 0
    for task, (b, setting) in tasks.items():
        got = {i: v for (t, i), v in lmms.items() if t == task}
        want = {i: v for (bb, s, i), v in project.items() if bb == b and s == setting and i in got}
        assert got, f"{task}: lmms-eval logged no samples"
        assert set(got) == set(want), f"{task}: items differ: {sorted(set(got) ^ set(want))}"
        for i, v in got.items():
            assert v == pytest.approx(want[i]), f"{task} {i}: lmms-eval {v} != {b}_eval {want[i]}"
        compared += len(got)
    # each task's `paper` metric is the paper's aggregate `<paper>_eval` reports for that setting
    assert {(b, s) for b, s, _ in lmms_agg} == set(tasks.values())
    for key, v in lmms_agg.items():
        assert v == pytest.approx(project_agg[key], nan_ok=True), f"{key}: {v} != {project_agg.get(key)}"
    # the replies must exercise both outcomes, or equal scores would prove little
    values = list(lmms.values())
    assert compared >= 40 and 0 < sum(values) < len(values)
    # the same prompt text went out on both paths
    missing = {message_text(r["body"]) for r in llm_double.requests} - project_texts
    assert not missing, f"lmms-eval sent prompts the project never sent: {sorted(missing)[:2]}"
