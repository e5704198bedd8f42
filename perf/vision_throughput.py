"""Frames per second for detection and tagging: our batched + prefetched path vs Ultralytics'
own per-image loop (``model.predict(path)`` one file at a time, the library decoding), for both
detection engines (``ultralytics``: batched library predict; ``tensor``: forge/vision/fast_detect.py).

    .venv/bin/python perf/vision_throughput.py [--n 48] [--batch 16] [--imgsz 640] [--device auto]

Random weights (``yolo11n.yaml``) are fine for timing: the network does the same work. On a
machine with real weights pass ``--weights /abs/yolo11n.pt``. On CUDA the script also reports
GPU utilisation (pynvml / nvidia-smi sampled during each run) and CUDA peak memory; peak RSS always.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from forge.vision.offline import ensure_offline_env

ensure_offline_env()


def make_frames(n: int, out: Path, unique: int = 96) -> list[Path]:
    """n files from bus.jpg, astronaut and coffee, at a few sizes (decode cost varies); past
    ``unique`` encoded frames the files are byte copies (decoding costs the same, encoding less)."""
    import shutil

    import skimage.data
    import ultralytics
    from PIL import Image

    srcs = [
        Image.open(Path(ultralytics.__file__).parent / "assets" / "bus.jpg").convert("RGB"),
        Image.fromarray(skimage.data.astronaut()),
        Image.fromarray(skimage.data.coffee()),
    ]
    paths = []
    for i in range(n):
        if i >= unique:
            p = out / f"f{i:04d}.jpg"
            shutil.copyfile(paths[i % unique], p)
            paths.append(p)
            continue
        im = srcs[i % 3]
        scale = (1.0, 1.5, 2.5)[(i // 3) % 3]  # up to ~2000x2700: like 1080p-4K video frames
        im = im.resize((int(im.width * scale), int(im.height * scale)))
        p = out / f"f{i:04d}.jpg"
        im.save(p, quality=90)
        paths.append(p)
    return paths


def letterbox_ops(fast, paths: list[Path]) -> str:
    """aten ops the tensor engine dispatches to letterbox one batch: on CUDA each is a kernel
    launch the host pays while the GPU may wait (counted on any device; same code)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from forge.vision.images import load_image, read_for_device

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.n += 1
            return func(*args, **(kwargs or {}))

    ims = [read_for_device(p) for p in paths] if fast.device_decode else [load_image(p, max_side=640) for p in paths]
    frames = fast.decode(ims)
    with Count():
        fast.preprocess(frames)
    shapes = len({f.hw if hasattr(f, "hw") else f.rgb.shape for f in frames})
    return f"letterbox: {Count.n} aten ops for a batch of {len(frames)} frames ({shapes} shapes)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=48)
    ap.add_argument("--loop-n", type=int, default=0, help="frames for the library's per-image loop (0 = all)")
    ap.add_argument("--batch", type=int, default=0, help="0 = the detector's auto choice (16 CUDA, 1 CPU)")
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--weights", default="yolo11n.yaml")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--threads", type=int, default=0, help="torch threads for each run (0 = the process default)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of the paths, interleaved; best of each")
    ap.add_argument(
        "--seeded",
        action="store_true",
        help="random weights re-drawn He-normal with a -4 class bias (as tests/vision/test_fast_detect.py): "
        "boxes above conf, so NMS and box parsing do real work",
    )
    ap.add_argument("--ram-checkpoint", default=os.environ.get("SUBTEXT_RAM_CHECKPOINT", ""))
    args = ap.parse_args()

    import pandas as pd
    import torch
    from stage_monitor import StageMonitor

    from forge.vision.detector import YoloDetector
    from forge.vision.fast_detect import TensorDetector
    from forge.vision.pipeline import DecodeOptions, run_detection
    from forge.vision.tagger import tags_from_detections

    det = YoloDetector(weights=args.weights, device=args.device, batch_size=args.batch, imgsz=args.imgsz)
    if args.seeded:
        g = torch.Generator().manual_seed(0)
        for mod in det.model.model.modules():
            if isinstance(mod, torch.nn.Conv2d):
                w = torch.randn(mod.weight.shape, generator=g) * (2 / mod.weight[0].numel()) ** 0.5
                mod.weight.data = w.to(mod.weight.device)
        for seq in det.model.model.model[-1].cv3:
            seq[-1].bias.data[:] = -4.0
        det.conf = 0.019
    cuda = det.device.startswith("cuda")
    print(
        f"device: {det.device}"
        + (
            f" ({torch.cuda.get_device_name(0)})"
            if cuda
            else f" (torch threads {torch.get_num_threads()}, cpus {os.cpu_count()})"
        )
    )
    print(
        f"model: {det.label}, half={det.half}, imgsz={args.imgsz}, batch={det.batch_size}, load {det.load_seconds:.2f}s"
    )
    if det.spec.kind == "random_init" and not args.seeded:
        print("NOTE: random weights: timing only; NMS sees few boxes, so real weights cost slightly more")

    with tempfile.TemporaryDirectory() as tmp:
        paths = make_frames(args.n, Path(tmp))
        frames = pd.DataFrame(
            {"frame_id": [p.stem for p in paths], "batch": "bench-0000", "path": [p.name for p in paths]}
        )
        # Warm-up (cudnn autotune / first-call allocations), not timed.
        det.model.predict(str(paths[0]), imgsz=args.imgsz, device=det.device, verbose=False)

        fast = TensorDetector(det)  # on CUDA: JPEGs decoded on the GPU (nvjpeg)
        from forge.vision.images import load_image, read_for_device

        fast.detect([load_image(paths[0], max_side=args.imgsz)])  # warm-up, not timed
        fast.detect([read_for_device(paths[0])])
        cpu_decode = TensorDetector(det, device_decode=False) if cuda else None
        onnx = None if cuda else TensorDetector(det, runtime="onnx")  # ONNX Runtime: CPU only
        if onnx is not None:
            onnx.detect([load_image(paths[0], max_side=args.imgsz)])

        loop_paths = paths[: args.loop_n or None]
        print(letterbox_ops(fast, paths[: det.batch_size]))

        def per_image_loop():
            for p in loop_paths:
                det.model.predict(
                    str(p),
                    imgsz=args.imgsz,
                    conf=det.conf,
                    iou=det.iou,
                    device=det.device,
                    quantize=16 if det.half else None,
                    verbose=False,
                )

        def stage(model):
            rejects: list = []
            df, stats = run_detection(
                frames,
                Path(tmp),
                model,
                lambda *a: rejects.append(a),
                DecodeOptions(workers=args.workers, ahead=max(8, det.batch_size * 2)),
            )
            return df, tags_from_detections(df, "bench"), stats.extra.get("phase_seconds", {})

        runs = [
            ("library per-image loop (predict(path))", per_image_loop),
            ("stage, engine=ultralytics (batched predict)", lambda: stage(det)),
            ("stage, engine=tensor (fast_detect)" + (", GPU decode" if cuda else ""), lambda: stage(fast)),
        ]
        if cpu_decode is not None:
            runs.append(("stage, engine=tensor, CPU decode threads", lambda: stage(cpu_decode)))
        if onnx is not None:
            runs.append(("stage, engine=onnx (fast_detect, ONNX Runtime)", lambda: stage(onnx)))
        print(f"frames: {args.n}, best of {args.repeat} round(s), the paths interleaved")
        results, best = {}, {}
        threads = torch.get_num_threads()
        for _ in range(args.repeat):  # interleaved rounds: a shared box's load swings between seconds
            for name, fn in runs:
                # the library's predict drops the process to cpu_count-1 threads: reset per run
                torch.set_num_threads(args.threads or threads)
                with StageMonitor() as mon:
                    out = fn()
                results[name] = out
                if name not in best or mon.seconds < best[name][0]:
                    best[name] = (mon.seconds, mon.summary(), out[2] if out else {})
        counts = {name: args.n for name, _ in runs} | {runs[0][0]: len(loop_paths)}
        base = counts[runs[0][0]] / best[runs[0][0]][0]  # frames/s of the library's loop
        for name, _ in runs:
            secs, summary, phases = best[name]
            fps = counts[name] / secs
            print(
                f"detection, {name:52s}: {fps:7.2f} frames/s ({counts[name]} in {secs:.2f}s, "
                f"x{fps / base:.2f} vs loop); {summary}"
            )
            if phases:  # run_detection's phase_seconds: where the stage's time went
                print("    phases (s): " + ", ".join(f"{k} {v:.3f}" for k, v in phases.items()))
        print("rows: " + ", ".join(f"{n.split('(')[0].strip()} {len(results[n][0])}" for n, _ in runs[1:]))
        if cuda:
            print(
                f"decode workers {args.workers}; GPU decode reads JPEG bytes in the workers, nvjpeg decodes per batch"
            )

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
