"""Fixtures for the dedup / OCR filter tests: real photos that ship in wheels, their
near-duplicate variants, text renders and broken files, plus one EasyOCR reader per session."""

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image, ImageDraw, ImageFont

from forge.storage import TableStore
from forge.storage.contracts import load_contract

REPO = Path(__file__).resolve().parents[2]


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    for name in ("DejaVuSans-Bold.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    import matplotlib

    return ImageFont.truetype(str(Path(matplotlib.get_data_path()) / "fonts/ttf/DejaVuSans-Bold.ttf"), size)


def originals() -> dict[str, Image.Image]:
    import importlib.util

    import matplotlib.cbook as cbook
    import skimage.data as sd

    # bus.jpg ships in the ultralytics wheel; locate it without importing the package
    ultralytics_dir = Path(importlib.util.find_spec("ultralytics").origin).parent

    return {
        "astronaut": Image.fromarray(sd.astronaut()),
        "coffee": Image.fromarray(sd.coffee()),
        "page": Image.fromarray(sd.page()).convert("RGB"),
        "text": Image.fromarray(sd.text()).convert("RGB"),
        "hopper": Image.open(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False)).convert("RGB"),
        "bus": Image.open(ultralytics_dir / "assets" / "bus.jpg").convert("RGB"),
        "chelsea": Image.fromarray(sd.chelsea()),
        "rocket": Image.fromarray(sd.rocket()),
    }


def variants(im: Image.Image) -> dict[str, Image.Image]:
    """The near-duplicates a re-post produces: resized, re-encoded, cropped 2 %, watermarked."""
    w, h = im.size
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=40)
    buf.seek(0)
    cw, ch = int(w * 0.02), int(h * 0.02)
    wm = im.copy()
    ImageDraw.Draw(wm).text((10, h - 40), "@memes4u", fill=(255, 255, 255), font=_font(28))
    return {
        "resized": im.resize((w // 2, h // 2), Image.LANCZOS),
        "jpeg": Image.open(buf).convert("RGB"),
        "crop2": im.crop((cw, ch, w - cw, h - ch)),
        "watermark": wm,
    }


def text_render(lines=("HELLO WORLD", "IRONY 2026"), size=(900, 400), font_size=64, spacing=2.4) -> Image.Image:
    im = Image.new("RGB", size, "white")
    d = ImageDraw.Draw(im)
    for k, line in enumerate(lines):
        d.text((30, 40 + k * int(font_size * spacing)), line, fill="black", font=_font(font_size))
    return im


@dataclass
class Media:
    root: Path
    files: dict[str, Path]  # name → file

    def __getitem__(self, name: str) -> Path:
        return self.files[name]


@pytest.fixture(scope="session")
def media(tmp_path_factory) -> Media:
    root = tmp_path_factory.mktemp("filters_media")
    files: dict[str, Path] = {}

    def save(name: str, im: Image.Image, ext: str = "png") -> None:
        p = root / f"{name}.{ext}"
        im.save(p, quality=90) if ext == "jpg" else im.save(p)
        files[name] = p

    for name, im in originals().items():
        save(name, im, "jpg" if name in ("hopper", "bus") else "png")
        if name in ("astronaut", "coffee", "rocket"):
            for vname, v in variants(im).items():
                save(f"{name}_{vname}", v, "jpg" if vname == "jpeg" else "png")
    save("text_heavy", text_render(("MEME TEXT", "ALL OVER", "THIS ONE", "IMAGE"), (800, 800), 110, 1.35))
    save("text_render", text_render())
    good = files["hopper"].read_bytes()
    (root / "truncated.jpg").write_bytes(good[: len(good) // 3])
    (root / "not_an_image.jpg").write_text("this is a text file, not a JPEG\n")
    (root / "empty.png").write_bytes(b"")
    files.update(
        {
            n: root / f
            for n, f in (("truncated", "truncated.jpg"), ("not_an_image", "not_an_image.jpg"), ("empty", "empty.png"))
        }
    )
    return Media(root, files)


def frames_table(store: TableStore, rows: list[dict]) -> dict[str, pd.DataFrame]:
    """Copy each row's ``file`` under the data dir and write the ``frames`` partitions.

    A row needs frame_id, batch, source, item_id, file; clip_id/kind/frame_index are
    optional (default: an image). Paths in the table are relative to the data dir, as the
    frames contract says.
    """
    contract = load_contract("frames")
    out = []
    for r in rows:
        src = Path(r["file"])
        rel = Path("media") / "frames" / r["batch"] / f"{r['frame_id']}{src.suffix}"
        (store.data_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (store.data_dir / rel).write_bytes(src.read_bytes())
        try:
            with Image.open(src) as im:
                w, h = im.size
        except Exception:  # noqa: BLE001 - a broken fixture file keeps its placeholder size
            w, h = 1, 1
        out.append(
            {
                "frame_id": r["frame_id"],
                "batch": r["batch"],
                "source": r["source"],
                "item_id": r["item_id"],
                "clip_id": r.get("clip_id"),
                "kind": r.get("kind", "clip_frame" if r.get("clip_id") else "image"),
                "frame_index": int(r.get("frame_index", 0)),
                "timestamp_s": r.get("timestamp_s"),
                "path": rel.as_posix(),
                "width": w,
                "height": h,
                "blur_var": None,
                "caption": None,
                "sha256": "0" * 64,
            }
        )
    df = pd.DataFrame(out)
    parts = {}
    for batch, g in df.groupby("batch"):
        g = contract.conform(g.reset_index(drop=True))
        assert not contract.validate(g), contract.validate(g)
        store.write("frames", g, batch, schema=contract.arrow_schema())
        parts[batch] = g
    return parts


@pytest.fixture(scope="session")
def ocr_resource():
    """One EasyOCR reader for the whole session, from the pinned, sha256-checked weights
    (the registry package, or $SUBTEXT_MODELS_DIR/easyocr when set)."""
    from forge.models.weights import easyocr_model_dir
    from resources.ocr import OCRResource

    res = OCRResource(model_dir=easyocr_model_dir(), gpu=False, max_side=1280)
    res.reader()  # build once, up front
    return res


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
