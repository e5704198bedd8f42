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


def build(work: Path, double: LLMDouble, port: int, timeout: int = 1500) -> subprocess.CompletedProcess:
    home, data = work / "home", work / "data"
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text((ROOT / ".dagster_home" / "dagster.yaml").read_text()
                                       if (ROOT / ".dagster_home" / "dagster.yaml").exists() else "")
    models = work / "models.yaml"
    models.write_text("models: []   # the configured endpoint's model only (forge.evals.config.configured_model)\n")
    env = {**os.environ, "DAGSTER_HOME": str(home), "SUBTEXT_DATA_DIR": str(data), "OPENAI_BASE_URL": double.base_url,
           "OPENAI_API_KEY": "sk-plausible-test", "SUBTEXT_LLM_MODEL": "plausible-1", "SUBTEXT_EVAL_MODELS": str(models),
           "SUBTEXT_DEMO_PORT": str(port), "PYTHONWARNINGS": "ignore"}
    env.pop("SUBTEXT_EXPORT_FORCE_STUB", None)
    return subprocess.run([sys.executable, "-m", "jobs.build", "--demo"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


if __name__ == "__main__":
    work = Path(sys.argv[1])
    with LLMDouble() as double:
        double.responder = Plausible(seed=int(os.environ.get("SEED", "7")))
        t0 = time.perf_counter()
        from tests.llm_double.server import _free_port

        proc = build(work, double, _free_port())
        print(proc.stdout[-6000:], proc.stderr[-3000:])
        print(f"rc={proc.returncode} in {time.perf_counter() - t0:.0f}s, {len(double.requests)} requests")
        print(sorted(double.responder.counts.items()))
