"""Frames per second for detection and tagging: our batched + prefetched path vs Ultralytics'
own per-image loop (``model.predict(path)`` one file at a time, the library decoding).

    .venv/bin/python benchmarks/vision_throughput.py [--n 48] [--batch 16] [--imgsz 640] [--device auto]

Random weights (``yolo11n.yaml``) are fine for timing: the network does the same work. On a
machine with real weights pass ``--weights /abs/yolo11n.pt``. On CUDA the script also reports
GPU utilisation (nvidia-smi sampled during the batched run) and peak memory.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from forge.vision.offline import ensure_offline_env  # noqa: E402

ensure_offline_env()


def make_frames(n: int, out: Path) -> list[Path]:
    """n files from bus.jpg, astronaut and coffee, at a few sizes (decode cost varies)."""
    import skimage.data
    import ultralytics
    from PIL import Image

    srcs = [Image.open(Path(ultralytics.__file__).parent / "assets" / "bus.jpg").convert("RGB"),
            Image.fromarray(skimage.data.astronaut()), Image.fromarray(skimage.data.coffee())]
    paths = []
    for i in range(n):
        im = srcs[i % 3]
        scale = (1.0, 1.5, 2.5)[(i // 3) % 3]  # up to ~2000x2700: like 1080p-4K video frames
        im = im.resize((int(im.width * scale), int(im.height * scale)))
        p = out / f"f{i:04d}.jpg"
        im.save(p, quality=90)
        paths.append(p)
    return paths


class GpuSampler(threading.Thread):
    def __init__(self, every: float = 0.1):
        super().__init__(daemon=True)
        self.samples: list[int] = []
        self.every, self.stop = every, threading.Event()

    def run(self) -> None:
        exe = shutil.which("nvidia-smi")
        if not exe:
            return
        while not self.stop.is_set():
            try:
                out = subprocess.run([exe, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                                     capture_output=True, text=True, timeout=5).stdout.split()
                if out:
                    self.samples.append(int(out[0]))
            except Exception:  # noqa: BLE001 - sampling is best effort; the benchmark still prints
                return
            time.sleep(self.every)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=48)
    ap.add_argument("--batch", type=int, default=0, help="0 = the detector's auto choice (16 CUDA, 1 CPU)")
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--weights", default="yolo11n.yaml")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--ram-checkpoint", default=os.environ.get("SUBTEXT_RAM_CHECKPOINT", ""))
    args = ap.parse_args()

    import pandas as pd
    import torch

    from forge.vision.detector import YoloDetector
    from forge.vision.pipeline import DecodeOptions, run_detection
    from forge.vision.tagger import tags_from_detections

    det = YoloDetector(weights=args.weights, device=args.device, batch_size=args.batch, imgsz=args.imgsz)
    cuda = det.device.startswith("cuda")
    print(f"device: {det.device}" + (f" ({torch.cuda.get_device_name(0)})" if cuda else f" (torch threads {torch.get_num_threads()}, cpus {os.cpu_count()})"))
    print(f"model: {det.label}, half={det.half}, imgsz={args.imgsz}, batch={det.batch_size}, load {det.load_seconds:.2f}s")
    if det.spec.kind == "random_init":
        print("NOTE: random weights: timing only; NMS sees few boxes, so real weights cost slightly more")

    with tempfile.TemporaryDirectory() as tmp:
        paths = make_frames(args.n, Path(tmp))
        frames = pd.DataFrame({"frame_id": [p.stem for p in paths], "batch": "bench-0000", "path": [p.name for p in paths]})
        # Warm-up (cudnn autotune / first-call allocations), not timed.
        det.model.predict(str(paths[0]), imgsz=args.imgsz, device=det.device, verbose=False)

        t0 = time.perf_counter()
        for p in paths:
            det.model.predict(str(p), imgsz=args.imgsz, conf=det.conf, iou=det.iou, device=det.device,
                              quantize=16 if det.half else None, verbose=False)
        if cuda:
            torch.cuda.synchronize()
        loop_s = time.perf_counter() - t0

        sampler = GpuSampler()
        if cuda:
            torch.cuda.reset_peak_memory_stats()
            sampler.start()
        rejects: list = []
        t0 = time.perf_counter()
        df, stats = run_detection(frames, Path(tmp), det, lambda *a: rejects.append(a),
                                  DecodeOptions(workers=args.workers, ahead=max(8, det.batch_size * 2)))
        tags = tags_from_detections(df, "bench")
        if cuda:
            torch.cuda.synchronize()
        batched_s = time.perf_counter() - t0
        sampler.stop.set()

        print(f"frames: {args.n}")
        print(f"detection, library per-image loop : {args.n / loop_s:7.2f} frames/s ({loop_s:.2f}s)")
        print(f"detection+yolo tags, batched+prefetch: {args.n / batched_s:7.2f} frames/s ({batched_s:.2f}s; "
              f"model {stats.model_seconds:.2f}s = {100 * stats.model_seconds / batched_s:.0f}% of wall; {len(tags)} tag rows)")
        print(f"speed-up: {loop_s / batched_s:.2f}x")
        if cuda:
            util = sampler.samples
            print(f"GPU utilisation during batched run: mean {sum(util) / len(util):.0f}% max {max(util)}% ({len(util)} samples)"
                  if util else "GPU utilisation: nvidia-smi not available")
            print(f"GPU peak memory: {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")

        if args.ram_checkpoint:
            from forge.vision.images import load_image
            from forge.vision.tagger import RamTagger

            ram = RamTagger(checkpoint=args.ram_checkpoint, device=args.device)
            ims = [load_image(p) for p in paths]
            t0 = time.perf_counter()
            ram.tag(ims)
            print(f"tagging, RAM ({ram.model_version}) batched: {args.n / (time.perf_counter() - t0):.2f} frames/s")
        else:
            print("tagging, RAM: skipped (no SUBTEXT_RAM_CHECKPOINT / --ram-checkpoint; package optional)")


if __name__ == "__main__":
    main()
