"""The per-frame stages on a real local Ray cluster (a head and a worker process started with
``ray start``) give the same tables as the in-process run, for a partitioned (two-batch, one run)
backfill of the media OCR stage (``text_ratio``) and the vision group. Random-weight YOLO11n at
conf=1e-5, so the detections tables are not empty; EasyOCR from the pinned weights at a small
``max_side`` to keep the test short."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from assets.ingest.filters import text_ratio
from assets.vision.assets import defs as vision_defs
from forge.contracts import load_contract
from forge.storage import TableStore
from forge.weights import easyocr_model_dir
from resources.detector import DetectorResource
from resources.ocr import OCRResource
from resources.storage import StorageResource
from resources.tagger import TaggerResource

ray = pytest.importorskip("ray")
BATCHES = ["b-0000", "b-0001"]
RAY = str(Path(sys.executable).parent / "ray")
TABLES = ["text_ratio", "detections", "tags", "person_indicators", "rich_scenes"]
MODELS = Path(easyocr_model_dir(verify=False))  # $SUBTEXT_MODELS_DIR/easyocr or the pinned registry package


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster():
    """Head (1 CPU) + one worker node (1 CPU) on 127.0.0.1; both stopped by process group."""
    port = _free_port()
    tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths have a length limit
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    common = ["--block", "--disable-usage-stats", "--num-gpus=0"]
    head = subprocess.Popen(
        [
            RAY,
            "start",
            "--head",
            "--node-ip-address=127.0.0.1",
            f"--port={port}",
            "--num-cpus=1",
            "--include-dashboard=false",
            f"--temp-dir={tmp}",
            *common,
        ],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    procs = [head]
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            r = subprocess.run([RAY, "status", f"--address={address}"], env=env, capture_output=True, text=True)
            if r.returncode == 0:
                break
            time.sleep(2)
        else:
            pytest.fail("Ray head did not come up")
        procs.append(
            subprocess.Popen(
                [RAY, "start", f"--address={address}", "--node-ip-address=127.0.0.1", "--num-cpus=1", *common],
                env=env,
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        while time.time() < deadline:
            r = subprocess.run([RAY, "status", f"--address={address}"], env=env, capture_output=True, text=True)
            if r.stdout.count("node_") >= 2:
                break
            time.sleep(2)
        else:
            pytest.fail("Ray worker node did not join")
        yield address
    finally:
        from forge.scale.ray_stages import shutdown

        shutdown()
        for p in reversed(procs):  # our own process groups only
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(p.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)


def _corpus(root: Path, photos: dict[str, Path]) -> Path:
    store = TableStore(root)
    fc = load_contract("frames")
    for k, batch in enumerate(BATCHES):
        media = store.media_dir / "frames" / batch
        media.mkdir(parents=True)
        rows = []
        for j, (name, src) in enumerate(sorted(photos.items())):
            fid = f"{batch}_{name}"
            dst = media / f"{fid}{src.suffix}"
            shutil.copy(src, dst)
            rows.append(
                {
                    "frame_id": fid,
                    "batch": batch,
                    "source": "demo",
                    "item_id": fid,
                    "clip_id": None,
                    "kind": "image",
                    "frame_index": 0,
                    "timestamp_s": None,
                    "path": str(dst.relative_to(store.data_dir)),
                    "width": 0,
                    "height": 0,
                    "blur_var": 1.0,
                    "caption": None,
                    "sha256": f"{k}{j}",
                }
            )
        (media / "broken.jpg").write_bytes(b"\xff\xd8 not a jpeg")
        rows.append(
            {
                **rows[0],
                "frame_id": f"{batch}_broken",
                "item_id": f"{batch}_broken",
                "path": str((media / "broken.jpg").relative_to(store.data_dir)),
            }
        )
        store.write("frames", fc.conform(pd.DataFrame(rows)), batch, schema=fc.arrow_schema())
        ids = [r["frame_id"] for r in rows]
        store.write(
            "duplicates",
            pd.DataFrame(
                {"frame_id": ids, "batch": batch, "group_id": ids, "kept_frame_id": ids, "is_kept": True, "distance": 0}
            ),
            batch,
        )
    return store.data_dir


def _backfill(data_dir: Path, user_net: Path, **detector) -> dict[str, pd.DataFrame]:
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", BATCHES)
    assets = [
        a
        for a in vision_defs.assets
        if a.key.to_user_string() in ("detections", "tags", "person_indicators", "rich_scenes")
    ]
    res = dg.materialize(
        [text_ratio, *assets],
        instance=instance,
        selection=[a.key for a in assets] + [text_ratio.key],
        tags={"dagster/asset_partition_range_start": BATCHES[0], "dagster/asset_partition_range_end": BATCHES[-1]},
        resources={
            "storage": StorageResource(data_dir=str(data_dir)),
            "tagger": TaggerResource(backend="yolo"),
            "ocr": OCRResource(model_dir=str(MODELS), gpu=False, max_side=320),
            "detector": DetectorResource(
                weights="yolo11n.yaml", conf=1e-5, imgsz=320, batch_size=2, decode_workers=1, **detector
            ),
        },
    )
    assert res.success
    store = TableStore(data_dir)
    out = {
        t: store.read(t, parts=BATCHES)
        .sort_values(list(store.read(t, parts=BATCHES).columns[:4]))
        .reset_index(drop=True)
        for t in TABLES
    }
    out["rejects"] = (
        store.read("rejects", parts=[f"{s}__{b}" for s in ("text_ratio", "detections") for b in BATCHES])[
            ["stage", "item_id", "reason"]
        ]
        .sort_values(["stage", "item_id"])
        .reset_index(drop=True)
    )
    return out


def test_media_and_vision_backfill_on_ray_equals_in_process(ray_cluster, photos, tmp_path, monkeypatch):
    if not MODELS.is_dir():
        pytest.skip(f"EasyOCR weights not found in {MODELS}")
    net = tmp_path / "easyocr_net"
    monkeypatch.delenv("SUBTEXT_RAY_ADDRESS", raising=False)
    local = _backfill(_corpus(tmp_path / "local", photos), net, ray_address="")
    monkeypatch.setenv("SUBTEXT_RAY_ADDRESS", ray_cluster)  # text_ratio reads the placement from config/env
    t0 = time.perf_counter()
    on_ray = _backfill(
        _corpus(tmp_path / "ray", photos),
        net,
        ray_address=ray_cluster,
        ray_actors=2,
        ray_num_cpus=1,
        ray_shard_frames=2,
    )
    print(f"ray backfill: {time.perf_counter() - t0:.1f}s")
    assert len(local["detections"]) > 0 and set(local["detections"]["batch"]) == set(BATCHES)
    assert len(local["text_ratio"]) == 2 * len(photos)
    for t in TABLES:
        a, b = local[t], on_ray[t]
        if t == "person_indicators":
            a, b = a.drop(columns=["annotated_path"]), b.drop(columns=["annotated_path"])
        pd.testing.assert_frame_equal(a, b, check_dtype=False, obj=t)
    pd.testing.assert_frame_equal(local["rejects"], on_ray["rejects"], obj="rejects")
    assert list(on_ray["rejects"]["item_id"]) == [f"{b}_broken" for b in BATCHES] * 2
    # The replicas really ran on the cluster: each declares 1 CPU and each node has 1, so Ray
    # had to place one on the head and one on the worker node (and free them between stages).
    from forge.scale import ray_stages

    assert set(ray_stages.LAST_PLACEMENT) == {"DetectionWorker", "OCRWorker"}
    for where in ray_stages.LAST_PLACEMENT.values():
        assert (
            len(where) == 2 and len({node for node, _ in where}) == 2 and os.getpid() not in {pid for _, pid in where}
        )
