"""Fixtures for the vision tests: offline Ultralytics, real photos, one random-weight model."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

OFFLINE = {
    "YOLO_OFFLINE": "1",
    "YOLO_AUTOINSTALL": "false",
    "YOLO_VERBOSE": "false",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


@pytest.fixture(scope="session", autouse=True)
def _offline_ultralytics(tmp_path_factory):
    """Set before ultralytics is imported anywhere in the session; restored afterwards."""
    cfg = tmp_path_factory.mktemp("yolo_config")
    saved = {k: os.environ.get(k) for k in [*OFFLINE, "YOLO_CONFIG_DIR"]}
    os.environ.update(OFFLINE)
    os.environ.setdefault("YOLO_CONFIG_DIR", str(cfg))
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def photo_dir(tmp_path_factory) -> Path:
    """bus.jpg (Ultralytics' own asset) and scikit-image's astronaut and coffee, as files."""
    import skimage.data
    import ultralytics

    d = tmp_path_factory.mktemp("photos")
    shutil.copy(Path(ultralytics.__file__).parent / "assets" / "bus.jpg", d / "bus.jpg")
    Image.fromarray(skimage.data.astronaut()).save(d / "astronaut.png")
    Image.fromarray(skimage.data.coffee()).save(d / "coffee.png")
    return d


@pytest.fixture(scope="session")
def photos(photo_dir) -> dict[str, Path]:
    return {"bus": photo_dir / "bus.jpg", "astronaut": photo_dir / "astronaut.png", "coffee": photo_dir / "coffee.png"}


@pytest.fixture(scope="session")
def random_detector():
    """YOLO11n from Ultralytics' architecture yaml: random weights, nothing downloaded.

    conf=1e-5 lets the untrained head emit (meaningless) boxes, so box parsing, indicators and
    tags are exercised end to end; nothing is asserted about what they contain.
    """
    from forge.vision.detector import YoloDetector

    return YoloDetector(weights="yolo11n.yaml", conf=1e-5, max_det=5, batch_size=2, imgsz=320)


def gray_rgb(size=(64, 48), value=128) -> np.ndarray:
    return np.full((size[1], size[0], 3), value, dtype=np.uint8)


RAM_DOUBLE = Path(__file__).parent / "ram_double"


@pytest.fixture
def ram_double(monkeypatch, tmp_path):
    """The ``ram`` test double importable (tests/vision/ram_double) and a checkpoint file to name;
    the double is unloaded afterwards, so later tests see the package missing again."""
    import sys

    monkeypatch.syspath_prepend(str(RAM_DOUBLE))
    ckpt = tmp_path / "ram_swin_large_14m.pth"
    ckpt.write_bytes(b"double checkpoint")
    yield ckpt
    for name in [m for m in sys.modules if m == "ram" or m.startswith("ram.")]:
        del sys.modules[name]
