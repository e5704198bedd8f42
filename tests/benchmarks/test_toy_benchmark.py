"""A sixth benchmark defined only under tests/ goes recipe → splits → gates → export →
evaluation → leaderboard through the real code location (definitions.py, cli.build, the
real resources) against the LLM double, registered by the environment alone: no shared
file names it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml
from PIL import Image

from forge.benchmarks import registry
from forge.storage import TableStore, open_catalog, refresh_catalog
from tests.benchmarks.toy.spec import SPEC
from tests.llm_double.server import message_text

ROOT = Path(__file__).resolve().parents[2]
N_IMAGES = 12
EASY = "img03"  # its question gives the answer away: the blind test must drop it


def responder(body):
    rf = (body.get("response_format") or {}).get("json_schema", {}).get("name")
    text = message_text(body)
    if rf == "toy_generate":
        name = re.search(r"Image (img\d+)", text).group(1)
        q = f"What does {name} imply?" + (" (the answer is the right one)" if name == EASY else "")
        return {
            "question": q,
            "options": [f"wrong a {name}", f"right {name}", f"wrong b {name}", f"wrong c {name}"],
            "answer": "B",
            "category": ["cats", "dogs"][int(name[3:]) % 2],
        }
    if rf == "blind_solver":  # text only: right only when the question gives it away
        letters = re.findall(r"^([A-D])\. (.+)$", text, re.M)
        good = next(x for x, t in letters if t.startswith("right"))
        return {"answer": good if "answer is the right one" in text else next(x for x, _ in letters if x != good)}
    opts = re.findall(r"^\(([A-D])\) (.+)$", text, re.M)  # the evaluated model: always right
    return next(x for x, t in opts if t.startswith("right")) if opts else None


def test_toy_benchmark_runs_end_to_end_from_tests_only(tmp_path, llm_double):
    # Nothing the toy needs lives in a shared folder: no file names the benchmark (a quoted name, a
    # toy_ asset or a /toy path); the word itself may appear (VAGUE's physical objects list it).
    for path in (SPEC.contracts_dir, SPEC.eval.prompts_dir, SPEC.recipe_config_path()):
        assert Path(path).resolve().is_relative_to(ROOT / "tests"), path
    for shared in (ROOT / "config", ROOT / "data_contracts", ROOT / "assets", ROOT / "forge"):
        hits = [
            p
            for p in shared.rglob("*")
            if p.is_file()
            and p.suffix in (".py", ".yaml")
            and re.search(r"[\'\"]toy[\'\"]|\btoy_|/toy\b", p.read_text(errors="ignore"))
        ]
        assert not hits, hits
    assert "toy" not in registry.names()  # registered by the environment of the run only

    data = tmp_path / "data"
    rng = np.random.default_rng(0)
    for i in range(N_IMAGES):
        (data / "toy_inbox").mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)).resize((64, 64)).save(
            data / "toy_inbox" / f"img{i:02d}.png"
        )
    llm_double.responder = responder
    models = tmp_path / "models.yaml"
    # only the listed model: the endpoint's own model (SUBTEXT_LLM_MODEL) is the toy's generator here
    models.write_text(
        yaml.safe_dump(
            {
                "include_configured_model": False,
                "models": [
                    {
                        "name": "m-double",
                        "model": "m-double",
                        "base_url": llm_double.base_url,
                        "api_key_env": "DOUBLE_KEY",
                        "accepts": "image",
                    }
                ],
            }
        )
    )
    env = {
        **os.environ,
        "SUBTEXT_BENCHMARKS": "tests.benchmarks.toy.spec",
        "SUBTEXT_DATA_DIR": str(data),
        "DAGSTER_HOME": str(tmp_path / "home"),
        "OPENAI_BASE_URL": llm_double.base_url,
        "OPENAI_API_KEY": "sk-double",
        "DOUBLE_KEY": "sk-double",
        "SUBTEXT_LLM_MODEL": "gen-double",
        "SUBTEXT_EVAL_MODELS": str(models),
    }
    env.pop("SUBTEXT_EXPORT_FORCE_STUB", None)
    (tmp_path / "home").mkdir()
    stages = [SPEC.items_asset] + [SPEC.asset(s) for s in ("splits", "gated", "export", "eval", "eval_report")]
    run = subprocess.run(
        [sys.executable, "-m", "cli.build", "--select", *stages],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "FAILED" not in run.stdout and all(s in run.stdout for s in stages)

    store = TableStore(data)
    assert len(store.read("toy_items")) == N_IMAGES
    sp = store.read("splits")
    assert set(sp["benchmark"]) == {"toy"} and set(sp["split"]) == {"dev", "test"}  # toy.yaml asks for a dev split
    gr = store.read("gate_results").set_index("item_id")
    assert gr.loc[f"toy_{EASY}", "reason"] == "blind_solvable"
    assert (gr.drop(index=f"toy_{EASY}")["status"] == "kept").all()
    # the toy's own trial budget (3); a wrong answer decides the others early (only 3/3 is flagged)
    assert gr.loc[f"toy_{EASY}", "blind_trials"] == 3 and gr["blind_trials"].between(1, 3).all()
    v1 = data / "exports" / "toy" / "v1"
    card = (v1 / "README.md").read_text()
    assert "About the toy benchmark" in card and "tests/benchmarks/toy/toy.yaml" in card
    manifest = json.loads((v1 / "manifest.json").read_text())
    assert manifest["n_items"] == N_IMAGES - 1

    scores = store.read("eval_scores")
    top = scores[scores["primary"] & (scores["slice"] == "all")].iloc[0]
    assert (top["benchmark"], top["metric"], top["value"], top["export_version"]) == ("toy", "accuracy", 1.0, "v1")
    assert top["n"] == manifest["splits"]["test"]  # exactly the exported test split was evaluated
    refresh_catalog(store)
    with open_catalog(store) as con:
        lb = con.sql("select * from leaderboard where benchmark = 'toy'").df()
    assert list(lb["model"]) == ["m-double"] and lb.iloc[0]["export_version"] == "v1" and lb.iloc[0]["coverage"] == 1.0
    assert (data / "reports" / "toy" / "accuracy_by_category.png").is_file()
