"""The fixed images that calibrate the int8 text detector (``detector_engine: onnx-int8``).

Static int8 quantisation needs the range of every activation, measured by running the fp32
network on representative inputs. They are built here, the same on every machine, from photos
that ship inside scikit-image's wheel, with captions rendered in matplotlib's DejaVu font (meme
style, dark on light, light on dark, small print), so the text and non-text activations are
both seen. None of these photos is in the sample corpus (forge/media/sample_corpus.py): the
int8 engine's deviation reported in docs/performance.md is measured on images it was not
calibrated on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

# (scikit-image photo, caption lines, style); styles: meme (white, black stroke), dark, light
_PLAN = [
    ("camera", ("WHEN THE PLAN", "ACTUALLY WORKS"), "meme"),
    ("coins", ("Exchange rates today",), "light"),
    ("hubble_deep_field", ("DEEP FIELD", "10,000 galaxies"), "meme"),
    ("immunohistochemistry", ("Figure 3: stained tissue, 40x",), "dark"),
    ("moon", (), ""),
    ("text", (), ""),
    ("clock", ("ALWAYS LATE",), "meme"),
    ("brick", ("No parking", "any time"), "dark"),
]
CALIBRATION_SIDE = 512  # longest side the calibration images are given at


def _font(size: int) -> ImageFont.FreeTypeFont:
    import matplotlib

    return ImageFont.truetype(str(Path(matplotlib.get_data_path()) / "fonts/ttf/DejaVuSans-Bold.ttf"), size)


def _caption(im: Image.Image, lines: tuple[str, ...], style: str) -> Image.Image:
    d = ImageDraw.Draw(im)
    w, h = im.size
    size = max(12, h // (9 if style == "meme" else 14))
    font = _font(size)
    for k, line in enumerate(lines):
        y = 8 + k * (size + 6) if style != "meme" or k == 0 else h - size - 16
        if style == "meme":
            d.text((12, y), line, fill="white", font=font, stroke_width=max(1, size // 16), stroke_fill="black")
        elif style == "dark":
            d.rectangle((8, y - 2, 8 + d.textlength(line, font=font) + 8, y + size + 4), fill=(245, 245, 240))
            d.text((12, y), line, fill=(20, 20, 20), font=font)
        else:
            d.text((12, y), line, fill=(250, 250, 250), font=font)
    return im


def calibration_images(side: int = CALIBRATION_SIDE) -> list[tuple[str, np.ndarray]]:
    """``(name, RGB uint8 array)``, longest side ``side``; deterministic."""
    import skimage.data

    out = []
    for name, lines, style in _PLAN:
        arr = getattr(skimage.data, name)()
        im = Image.fromarray(arr).convert("RGB")
        scale = side / max(im.size)
        im = im.resize((max(32, round(im.width * scale)), max(32, round(im.height * scale))), Image.BILINEAR)
        out.append((name, np.asarray(_caption(im, lines, style) if lines else im)))
    return out
