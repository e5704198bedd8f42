"""Unchanged re-runs skip the media and vision work (forge/storage/stage_cache.py).

Runs the ingest + vision part of the demo on the sample corpus three times in a fresh data
dir and Dagster instance (``python -m cli.build --demo --select ...``, a new process each
time, as ``make demo`` would):

1. first run: everything computed;
2. unchanged re-run: prints its wall time and the ratio to the first run (goal: <= 10 %);
3. ``text_ratio`` alone with a changed OCR threshold (``max_ratio``): prints how many OCR
   results were reused vs computed (goal: all reused) and its time against the first run's
   ``text_ratio`` step.

    .venv/bin/python perf/rerun_reuse.py [--keep DIR]
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
STAGES = [
    "sources",
    "videos",
    "clips",
    "frames",
    "frame_hashes",
    "duplicates",
    "text_ratio",
    "detections",
    "person_indicators",
    "tags",
    "rich_scenes",
    "evidence",
]


def build(env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "cli.build", "--demo", "--select", *STAGES],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    secs = time.perf_counter() - t0
    if proc.returncode != 0:
        print(proc.stdout[-4000:], proc.stderr[-4000:])
        raise SystemExit(f"cli.build failed ({proc.returncode})")
    for line in proc.stdout.splitlines():
        if line.startswith(("→", "  ok", "  FAILED")):
            print("   ", line.strip())
    return secs


def materializations(instance, asset: str):
    import dagster as dg

    records = instance.fetch_materializations(dg.AssetKey(asset), limit=1000).records
    return sorted(records, key=lambda r: r.timestamp)


def changed_threshold(home: Path, data: Path, max_ratio: float) -> tuple[float, dict]:
    """Re-materialize ``text_ratio`` over every batch with another ``max_ratio``."""
    os.environ.update({"DAGSTER_HOME": str(home), "SUBTEXT_DATA_DIR": str(data)})
    sys.path.insert(0, str(ROOT))
    import dagster as dg

    from cli.build import PARTITION_RANGE_END_TAG, PARTITION_RANGE_START_TAG
    from definitions import build_defs

    defs = build_defs()
    instance = dg.DagsterInstance.get()
    keys = instance.get_dynamic_partitions("batches")
    job = defs.resolve_implicit_job_def_def_for_assets([dg.AssetKey("text_ratio")])
    t0 = time.perf_counter()
    res = job.execute_in_process(
        instance=instance,
        asset_selection=[dg.AssetKey("text_ratio")],
        run_config={"ops": {"text_ratio": {"config": {"max_ratio": max_ratio}}}},
        tags={PARTITION_RANGE_START_TAG: keys[0], PARTITION_RANGE_END_TAG: keys[-1]},
    )
    secs = time.perf_counter() - t0
    assert res.success
    md = {
        k: getattr(v, "value", v)
        for k, v in materializations(instance, "text_ratio")[-1].asset_materialization.metadata.items()
    }
    first = materializations(instance, "text_ratio")[0].asset_materialization.metadata["seconds"].value
    return secs, {
        "first_text_ratio_s": first,
        **{k: md.get(k) for k in ("seconds", "reused", "computed", "frames_text_heavy")},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keep", help="work in this folder and keep it (default: a temp dir, removed)")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="rerun_reuse_"))
    home, data = work / "home", work / "data"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home), "SUBTEXT_DATA_DIR": str(data)}
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    try:
        print("first run (ingest + vision on the sample corpus):")
        first = build(env)
        print(f"  first run:      {first:7.1f} s")
        print("unchanged re-run:")
        second = build(env)
        print(f"  unchanged re-run: {second:7.1f} s")
        print(f"  ratio re-run / first = {second / first:.1%}  (goal <= 10%)")
        print("text_ratio with max_ratio 0.3 -> 0.05 (OCR threshold changed):")
        secs, md = changed_threshold(home, data, 0.05)
        print(
            f"  text_ratio re-run: {secs:.1f} s wall, step {md['seconds']} s vs {md['first_text_ratio_s']} s "
            f"on the first run; OCR results reused {md['reused']}, computed {md['computed']}; "
            f"text-heavy frames now {md['frames_text_heavy']}"
        )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
