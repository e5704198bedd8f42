"""Real detections, only with a verified copy of yolo11n.pt / yolov8n.pt.

Runs when SUBTEXT_YOLO_WEIGHTS points at a file whose size and sha256 match config/weights.yaml
(none can be obtained on the build machines, so in CI these tests are skipped, and say why).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from forge.provenance.versioning import sha256_file
from forge.vision.detector import YoloDetector, reference_weights
from forge.vision.images import load_image


def _verified_weights() -> tuple[Path | None, str]:
    raw = os.environ.get("SUBTEXT_YOLO_WEIGHTS", "")
    if not raw:
        return (
            None,
            "SUBTEXT_YOLO_WEIGHTS is not set: no real YOLO weights on this machine (config/weights.yaml: optional)",
        )
    p = Path(raw)
    if not p.is_file():
        return None, f"SUBTEXT_YOLO_WEIGHTS={raw} does not exist"
    ref = reference_weights().get(p.name)
    if ref is None:
        return None, f"{p.name} is not a reference file ({', '.join(reference_weights())})"
    digest = sha256_file(p)
    if digest != ref[1]:
        return None, f"{p} sha256 {digest} != reference {ref[1]} (config/weights.yaml)"
    return p, ""


WEIGHTS, WHY = _verified_weights()
pytestmark = pytest.mark.skipif(WEIGHTS is None, reason=f"real-weights detections not checked: {WHY}")


@pytest.fixture(scope="module")
def real_detector():
    return YoloDetector(weights=str(WEIGHTS), conf=0.35, batch_size=3)


def _counts(dets):
    out: dict[str, int] = {}
    for d in dets:
        out[d.class_name] = out.get(d.class_name, 0) + 1
    return out


def test_real_detections_on_known_photos(real_detector, photos):
    assert real_detector.spec.kind == "file" and real_detector.spec.sha256 == reference_weights()[WEIGHTS.name][1]
    ims = [load_image(photos[k]) for k in ("bus", "astronaut", "coffee")]
    bus, astro, coffee = (_counts(d) for d in real_detector.detect(ims))
    assert bus.get("person", 0) >= 3 and bus.get("bus", 0) >= 1, bus
    assert astro.get("person", 0) == 1, astro
    assert coffee.get("person", 0) == 0, coffee
