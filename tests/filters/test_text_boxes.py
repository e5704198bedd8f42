"""Text ratio from EasyOCR's detector alone (forge.media.text_boxes) vs the full readtext path.

Tolerance: per frame |ratio difference| <= RATIO_TOL (0.5 % of the image) and at most one
box more or fewer. Same image and settings give the same boxes; only batching (several frames
in one forward pass) can move a score across a threshold. On this corpus the two agree exactly.
"""

import numpy as np
import pytest

from forge.media.ocr import load_rgb, ocr_frame
from forge.media.text_boxes import detect_batch, measure_frames
from tests.filters.conftest import text_render

RATIO_TOL = 0.005
MAX_SIDE = 1280


def test_detect_batch_refuses_mixed_sizes():
    a, b = np.zeros((40, 60, 3), np.uint8), np.zeros((60, 40, 3), np.uint8)
    with pytest.raises(ValueError, match="one shape"):
        detect_batch(None, [a, b], [1.0, 1.0], [(60, 40), (40, 60)])


@pytest.mark.slow
def test_detector_ratio_equals_readtext_ratio(ocr_resource, media, tmp_path):
    reader = ocr_resource.reader()
    # Three same-sized renders go through the detector in ONE batch; the photos alone.
    for k, lines in enumerate([("SALE TODAY", "50 PERCENT"), ("NO TEXT HERE?",), ("A", "B C D")]):
        text_render(lines).save(tmp_path / f"same{k}.png")
    paths = [
        media["text_render"],
        media["text_heavy"],
        media["hopper"],
        media["bus"],
        *(tmp_path / f"same{k}.png" for k in range(3)),
    ]
    got = {m.key: m for m in measure_frames(reader, [(str(p), p) for p in paths], MAX_SIDE, batch_size=4)}
    assert list(got) == [str(p) for p in paths]  # input order kept
    for p in paths:
        ref = ocr_frame(reader, load_rgb(p), max_side=MAX_SIDE)
        res = got[str(p)].result
        assert res is not None, got[str(p)].error
        assert abs(res.ratio - ref.ratio) <= RATIO_TOL, (p.name, res.ratio, ref.ratio)
        assert abs(res.n_boxes - ref.n_boxes) <= 1, (p.name, res.n_boxes, ref.n_boxes)
        assert (res.width, res.height) == (ref.width, ref.height)
        assert res.text == ""  # not recognised: nobody asked for the text
    assert got[str(media["text_heavy"])].result.ratio > 0.3  # the filter still sees a text-heavy frame
    assert got[str(media["hopper"])].result.ratio < 0.05


@pytest.mark.slow
def test_recognition_only_for_frames_that_need_text(ocr_resource, media):
    reader = ocr_resource.reader()
    paths = [media["text_render"], media["text_heavy"], media["truncated"]]
    wanted = str(media["text_render"])
    out = list(
        measure_frames(
            reader, [(str(p), p) for p in paths], MAX_SIDE, batch_size=2, needs_text=lambda key, res: key == wanted
        )
    )
    assert [m.key for m in out] == [str(p) for p in paths]
    read, skipped, broken = out
    full = ocr_frame(reader, load_rgb(media["text_render"]), max_side=MAX_SIDE)
    assert read.result.text == full.text and "HELLO" in read.result.text.upper()
    assert read.result.ratio == pytest.approx(full.ratio, abs=RATIO_TOL)
    assert all(b["conf"] is not None for b in read.result.boxes)
    assert skipped.result.text == "" and skipped.result.n_boxes >= 2
    assert broken.result is None and broken.error is not None  # recorded, the others proceed
