"""Detection (or OCR text ratio) frames/s on Ray with 1 vs N actors (one YOLO / EasyOCR replica
each), plus in-process.

    .venv/bin/python perf/ray_scaling.py [--n 32] [--actors 2] [--address local] [--imgsz 640]
    .venv/bin/python perf/ray_scaling.py --stage ocr [--n 16] [--max-side 960] [--ocr-engine onnx-int8]

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


def _detection_runs(a, frames, data_dir: Path):
    from forge.vision.detect_worker import RemoteDetector
    from forge.vision.detector import YoloDetector
    from forge.vision.pipeline import DecodeOptions, run_detection

    opts = DecodeOptions(workers=1)
    kwargs = {"weights": "yolo11n.yaml", "imgsz": a.imgsz, "batch_size": 0, "device": "auto"}
    det = YoloDetector(**kwargs)
    return (
        lambda fr: run_detection(fr, data_dir, det, lambda *x: None, opts),
        lambda p: RemoteDetector(kwargs, "auto", p).run_remote(frames, data_dir, lambda *x: None, opts),
    )


def _ocr_runs(a, frames, data_dir: Path):
    """The text_ratio stage's detect path: ratio only (``recognise: none``), default detector engine."""
    from forge.media.text_boxes import measure_frames, ocr_on_ray, ocr_reader_args
    from resources.ocr import OCRResource

    ocr = OCRResource(max_side=a.max_side, gpu=a.gpus > 0, detector_engine=a.ocr_engine)
    frames = frames.assign(kind="image")
    return (
        lambda fr: list(
            measure_frames(ocr.detect_reader(), [(i, data_dir / q) for i, q in enumerate(fr["path"])], ocr.max_side)
        ),
        lambda p: ocr_on_ray(p, ocr_reader_args(ocr), frames, data_dir, ocr.max_side, 8, "none", 1.0),
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--actors", type=int, default=2)
    ap.add_argument("--address", default="local")
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--gpus", type=float, default=0.0)
    ap.add_argument("--dir", default="")
    ap.add_argument("--stage", choices=("detections", "ocr"), default="detections")
    ap.add_argument("--max-side", type=int, default=960, help="--stage ocr: the OCR resource's max_side")
    ap.add_argument("--ocr-engine", default="auto", help="--stage ocr: detector_engine (auto, onnx, onnx-int8)")
    a = ap.parse_args()

    import pandas as pd
    import ray
    from vision_throughput import make_frames

    from forge.scale import ray_pool

    with tempfile.TemporaryDirectory(dir=a.dir or None) as tmp:
        paths = make_frames(a.n, Path(tmp))
        frames = pd.DataFrame({"frame_id": [p.stem for p in paths], "batch": "bench", "path": [p.name for p in paths]})
        if a.stage == "ocr":
            run_local, run_remote = _ocr_runs(a, frames, Path(tmp))
        else:
            run_local, run_remote = _detection_runs(a, frames, Path(tmp))
        run_local(frames.iloc[:1])  # warm-up
        t0 = time.perf_counter()
        run_local(frames)
        print(f"{a.stage}, in-process: {a.n / (time.perf_counter() - t0):.2f} frames/s")
        if a.address == "local":
            with ray_pool.private_cluster_env():  # loopback only, nothing in $HOME (docs/security.md)
                ray.init(
                    num_cpus=a.actors,
                    include_dashboard=False,
                    log_to_driver=False,
                    runtime_env=ray_pool.worker_runtime_env(),  # the opt-outs travel to the workers
                )
        base = warm_base = None
        for k in sorted({1, a.actors}):
            p = ray_pool.RayPlacement(a.address, k, 1.0, a.gpus, max(1, a.n // (4 * k)))
            with ray_pool.step_pools():  # second pass on the same replicas: a backfill's later partitions
                t0 = time.perf_counter()
                run_remote(p)
                dt = time.perf_counter() - t0  # includes each replica's model load, as a stage run does
                t0 = time.perf_counter()
                run_remote(p)
                warm = time.perf_counter() - t0
            base, warm_base = base or dt, warm_base or warm
            print(
                f"ray, {k} actor(s): {a.n / dt:.2f} frames/s cold ({dt:.1f}s incl. replica start-up, "
                f"x{base / dt:.2f} vs 1); {a.n / warm:.2f} frames/s warm (x{warm_base / warm:.2f} vs 1)"
            )
        ray_pool.shutdown()


if __name__ == "__main__":
    main()
