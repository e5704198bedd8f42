"""Run the whole demo graph against the plausible test server (used by test_nonstub.py; also by hand:
``python -m tests.e2e.run_nonstub /tmp/somewhere``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.llm_double import LLMDouble
from tests.llm_double.plausible import Plausible

ROOT = Path(__file__).resolve().parents[2]
# The demo's sources minus its long local videos: one subtitled video over yt-dlp (ViMU, MAIA),
# a dead link, the photo folder (II-Bench, VAGUE) and the captioned table (Hummus).
SOURCES = """\
sources:
  - {name: loopback, type: urls, urls: ["${SAMPLE_SERVER}/watch/scenes.html", "${SAMPLE_SERVER}/gone/missing_video.mp4"]}
  - {name: local_images, type: folder, path: "${SAMPLE_CORPUS}/images", media: image, batch_size: 8}
  - {name: captioned, type: table, path: "${SAMPLE_CORPUS}/table/captions.csv", image_column: image,
     caption_column: caption}
"""
# Items the server scripts to fail, per prompt: every request about a *doomed* item is refused (the
# stage's ``*_failed`` reason), every reply about a *stubborn* one keeps its flaw (refine runs out of
# rounds). Only prompts of stages with items to spare (MAIA, II-Bench, Hummus, ViMU's judge).
DOOMED = {
    "maia_questions": 1,
    "maia_answers": 1,
    "maia_consistency": 1,
    "maia_pool_contradiction": 1,
    "maia_statement": 1,
    "maia_foil_structural": 1,
    "maia_foil_*": 1,
    "iibench_implication": 1,
    "iibench_labels": 1,
    "iibench_distractor_judge": 1,
    "hummus_annotate": 1,
    "vimu_validate_qa": 1,
}
STUBBORN = {"maia_foil_*": 1}
# Prompts whose flaw kinds (taking turns) are each a reason of their own: flawed more often, so the
# demo's few requests show every kind.
FLAW_RATES = {
    "maia_questions": 0.35,
    "iibench_distractor_judge": 0.5,
    "iibench_questions": 0.3,
}

# Share of MAIA questions with an annotator who keeps contradicting the pool (pool_contradiction)
P_CONTRARY = 0.25

# The LLM part of the graph: what a second, unchanged run re-materializes (all from the cache).
LLM_GROUPS = ("hummus", "iibench", "maia", "vague", "vimu", "splits", "evals")


def llm_assets() -> list[str]:
    from definitions import build_defs

    graph = build_defs().resolve_asset_graph()
    return sorted(k.to_user_string() for k in graph.materializable_asset_keys if graph.get(k).group_name in LLM_GROUPS)


def build(
    work: Path,
    double: LLMDouble,
    port: int,
    select: list[str] | None = None,
    timeout: int = int(os.environ.get("SUBTEXT_E2E_TIMEOUT", "1800")),
) -> subprocess.CompletedProcess:
    home, data = work / "home", work / "data"
    work.mkdir(parents=True, exist_ok=True)
    (work / "sources.yaml").write_text(SOURCES)
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(
        (ROOT / ".dagster_home" / "dagster.yaml").read_text()
        if (ROOT / ".dagster_home" / "dagster.yaml").exists()
        else ""
    )
    models = work / "models.yaml"
    models.write_text("models: []   # the configured endpoint's model only (forge.evals.config.configured_model)\n")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "SUBTEXT_DATA_DIR": str(data),
        "OPENAI_BASE_URL": double.base_url,
        "OPENAI_API_KEY": "sk-plausible-test",
        "SUBTEXT_LLM_MODEL": "plausible-1",
        "SUBTEXT_EVAL_MODELS": str(models),
        "SUBTEXT_DEMO_PORT": str(port),
        "PYTHONWARNINGS": "ignore",
        "SUBTEXT_SOURCES": str(work / "sources.yaml"),
    }
    env.pop("SUBTEXT_EXPORT_FORCE_STUB", None)
    args = ["--select", *select] if select else []
    return subprocess.run(
        [sys.executable, "-m", "cli.build", "--demo", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


if __name__ == "__main__":
    work = Path(sys.argv[1])
    with LLMDouble() as double:
        double.responder = Plausible(
            seed=int(os.environ.get("SEED", "7")),
            doomed=DOOMED,
            stubborn=STUBBORN,
            flaw_rates=FLAW_RATES,
            rotate_flaws=True,
            p_contrary=P_CONTRARY,
        )
        t0 = time.perf_counter()
        from tests.llm_double.server import _free_port

        proc = build(work, double, _free_port())
        print(proc.stdout[-6000:], proc.stderr[-3000:])
        print(f"rc={proc.returncode} in {time.perf_counter() - t0:.0f}s, {len(double.requests)} requests")
        print(sorted(double.responder.counts.items()))
