"""Detection frames/s on Ray with 1 vs N actors (one YOLO replica each), plus in-process.

    .venv/bin/python benchmarks/ray_scaling.py [--n 32] [--actors 2] [--address local] [--imgsz 640]

``--address local`` starts a private Ray on this machine with --actors CPUs; pass ``auto`` or
``ray://head:10001`` to measure a real cluster (add --gpus 1 for one GPU per replica). Frames
are written to a temp dir, which on a multi-node cluster must be on a shared mount (--dir).
Each actor count runs the frames twice on the same replicas: "cold" includes the replicas'
start-up and model load (a stage's first partition), "warm" does not (its later partitions).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--actors", type=int, default=2)
    ap.add_argument("--address", default="local")
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--gpus", type=float, default=0.0)
    ap.add_argument("--dir", default="")
    a = ap.parse_args()

    import pandas as pd
    import ray
    from vision_throughput import make_frames

    from forge.scale import ray_stages
    from forge.vision.detector import YoloDetector
    from forge.vision.pipeline import DecodeOptions, run_detection

    with tempfile.TemporaryDirectory(dir=a.dir or None) as tmp:
        paths = make_frames(a.n, Path(tmp))
        frames = pd.DataFrame({"frame_id": [p.stem for p in paths], "batch": "bench", "path": [p.name for p in paths]})
        opts = DecodeOptions(workers=1)
        kwargs = {"weights": "yolo11n.yaml", "imgsz": a.imgsz, "batch_size": 0, "device": "auto"}
        det = YoloDetector(**kwargs)
        run_detection(frames.iloc[:1], Path(tmp), det, lambda *x: None, opts)  # warm-up
        t0 = time.perf_counter()
        run_detection(frames, Path(tmp), det, lambda *x: None, opts)
        print(f"in-process: {a.n / (time.perf_counter() - t0):.2f} frames/s")
        if a.address == "local":
            ray.init(
                num_cpus=a.actors,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"py_modules": ray_stages.PY_MODULES, "env_vars": ray_stages.WORKER_ENV},
            )
        base = warm_base = None
        for k in sorted({1, a.actors}):
            p = ray_stages.RayPlacement(a.address, k, 1.0, a.gpus, max(1, a.n // (4 * k)))
            remote = ray_stages.RemoteDetector(kwargs, "auto", p)
            with ray_stages.step_pools():  # second pass on the same replicas: a backfill's later partitions
                t0 = time.perf_counter()
                remote.run_remote(frames, Path(tmp), lambda *x: None, opts)
                dt = time.perf_counter() - t0  # includes each replica's model load, as a stage run does
                t0 = time.perf_counter()
                remote.run_remote(frames, Path(tmp), lambda *x: None, opts)
                warm = time.perf_counter() - t0
            base, warm_base = base or dt, warm_base or warm
            print(
                f"ray, {k} actor(s): {a.n / dt:.2f} frames/s cold ({dt:.1f}s incl. replica start-up, "
                f"x{base / dt:.2f} vs 1); {a.n / warm:.2f} frames/s warm (x{warm_base / warm:.2f} vs 1)"
            )
        ray_stages.shutdown()


if __name__ == "__main__":
    main()
