"""CLI backfill over several partitions, as a user types it (docs/operations.md, "Backfills").

`dagster asset materialize --select sources` registers three batches of a tiny local sources
file; `dg launch --assets videos,clips,frames --partition-range first...last` then builds all
three in one run (the assets' single-run backfill policy), recorded in the instance under
DAGSTER_HOME: one materialization per asset and partition, one Parquet file per batch.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from PIL import Image

from forge.storage import TableStore

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.cli


def _run(args: list[str], env: dict[str, str]) -> str:
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "RUN_SUCCESS" in out, out[-4000:]
    return out


def test_backfill_three_partitions_from_the_cli(tmp_path, monkeypatch):
    images = tmp_path / "data" / "imgs"  # local sources must lie in the data dir or allowed_roots
    images.mkdir(parents=True)
    for i, colour in enumerate(("red", "green", "blue")):
        Image.new("RGB", (64, 48), colour).save(images / f"{i}.png")
    sources = tmp_path / "sources.yaml"
    sources.write_text(f"sources:\n  - {{name: tiny, type: folder, path: '{images}', media: image, batch_size: 1}}\n")
    home, data = tmp_path / "home", tmp_path / "data"
    home.mkdir()
    (home / "dagster.yaml").write_text((ROOT / ".dagster_home" / "dagster.yaml").read_text())
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "SUBTEXT_DATA_DIR": str(data),
        "SUBTEXT_SOURCES": str(sources),
        "PYTHONWARNINGS": "ignore",
    }

    _run([str(BIN / "dagster"), "asset", "materialize", "-m", "definitions", "-d", ".", "--select", "sources"], env)
    batches = ["tiny-0000", "tiny-0001", "tiny-0002"]
    _run(
        [
            str(BIN / "dg"),
            "launch",
            "-m",
            "definitions",
            "-d",
            ".",
            "--assets",
            "videos,clips,frames",
            "--partition-range",
            f"{batches[0]}...{batches[-1]}",
        ],
        env,
    )

    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.get() as instance:
        assert sorted(instance.get_dynamic_partitions("batches")) == batches
        for asset in ("videos", "clips", "frames"):
            assert sorted(instance.get_materialized_partitions(dg.AssetKey(asset))) == batches, asset
        runs = instance.get_runs()
        assert len(runs) == 2  # one run registered the batches, one run built all three
    frames = TableStore(data).query("select batch, count(*) n from frames group by batch order by batch")
    assert frames["batch"].tolist() == batches and frames["n"].tolist() == [1, 1, 1]
