"""Resources: the model is loaded once per process; RAM is optional and says so."""

from __future__ import annotations

import pytest

from forge.vision.tagger import RamUnavailable
from resources.detector import DetectorResource
from resources.tagger import TaggerResource


def test_detector_loaded_once_per_process():
    a = DetectorResource(weights="yolo11n.yaml", imgsz=320)
    b = DetectorResource(weights="yolo11n.yaml", imgsz=320)
    assert a.get() is b.get() is a.get()
    assert DetectorResource(weights="yolo11n.yaml", imgsz=256).get() is not a.get()
    assert a.is_random


def test_ram_backend_without_package_or_checkpoint_fails_clearly(tmp_path):
    res = TaggerResource(backend="ram", ram_checkpoint=str(tmp_path / "ram_swin_large_14m.pth"))
    with pytest.raises(RamUnavailable, match="recognize-anything|checkpoint"):
        res.get_ram()
    with pytest.raises(ValueError):
        TaggerResource(backend="yolo").get_ram()
