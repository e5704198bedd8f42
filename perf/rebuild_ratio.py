"""An unchanged rebuild of the whole graph against the first build (goal: <= 10 %).

Runs ``python -m cli.build --demo`` in a fresh data dir and Dagster instance, then the same
command again with nothing changed (``--only-stale``, what ``make demo`` runs), each in a new
process as ``make demo`` would, and prints both wall times and the ratio. The whole graph:
sample corpus, ingest, vision, the five recipes, splits, gates, exports, evaluations.

    .venv/bin/python perf/rebuild_ratio.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _build(env: dict[str, str], log: Path, *extra: str) -> float:
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        rc = subprocess.run(
            [sys.executable, "-m", "cli.build", "--demo", *extra],
            cwd=ROOT,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
        ).returncode
    if rc != 0:
        sys.exit(f"build failed (exit {rc}), see {log}")
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="rebuild_ratio_"))
    (work / "home").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", work / "home" / "dagster.yaml")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(work / "home"),
        "SUBTEXT_DATA_DIR": str(work / "data"),
        "SUBTEXT_DEMO_PORT": os.environ.get("SUBTEXT_DEMO_PORT", "18765"),  # item ids follow the URLs
        "YOLO_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    first = _build(env, work / "first.log")
    print(f"first build:      {first:7.1f} s  ({work / 'first.log'})", flush=True)
    again = _build(env, work / "unchanged.log", "--only-stale")
    print(f"unchanged build:  {again:7.1f} s  ({work / 'unchanged.log'})")
    print(f"ratio:            {again / first * 100:7.1f} %  (goal <= 10 %)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
