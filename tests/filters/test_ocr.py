"""Text-area ratio: union-area maths, clip rules, and EasyOCR on the shared weights."""

import numpy as np
import pytest

from forge.media.ocr import clip_passes, load_rgb, union_area_ratio
from tests.filters.conftest import text_render


def test_union_area_counts_overlap_once():
    a = [[0, 0], [50, 0], [50, 50], [0, 50]]  # 2500 px
    b = [[25, 25], [75, 25], [75, 75], [25, 75]]  # 2500 px, 625 shared with a
    r = union_area_ratio([a, b], 100, 100)
    assert r == pytest.approx((2500 + 2500 - 625) / 10000, abs=0.02)
    assert union_area_ratio([a, a, a], 100, 100) == pytest.approx(union_area_ratio([a], 100, 100))
    assert union_area_ratio([a, b], 100, 100) < 0.5  # the naive sum of areas would give 0.5


def test_union_area_edge_cases():
    assert union_area_ratio([], 640, 480) == 0.0
    whole = [[0, 0], [640, 0], [640, 480], [0, 480]]
    assert union_area_ratio([whole], 640, 480) == pytest.approx(1.0, abs=0.01)
    outside = [[-100, -100], [1000, -100], [1000, 1000], [-100, 1000]]  # clipped to the image
    assert union_area_ratio([outside], 640, 480) == 1.0
    tri = [[0, 0], [100, 0], [0, 100]]  # polygons, not only rectangles
    assert union_area_ratio([tri], 100, 100) == pytest.approx(0.5, abs=0.02)
    # huge frames are measured on a small mask: same answer
    big = [[0, 0], [4000, 0], [4000, 1000], [0, 1000]]
    assert union_area_ratio([big], 8000, 4000, max_side=500) == pytest.approx(0.125, abs=0.01)
    with pytest.raises(ValueError):
        union_area_ratio([tri], 0, 10)


@pytest.mark.parametrize("rule,want", [("any", True), ("all", False), ("mean", True)])
def test_clip_rules(rule, want):
    ratios = [0.0, 0.05, 0.6, 0.02]  # one title card among text-light frames
    assert clip_passes(ratios, 0.3, rule) is want
    assert clip_passes([0.5, 0.6], 0.3, rule) is False
    assert clip_passes([], 0.3, rule) is False


@pytest.mark.slow
def test_easyocr_reads_rendered_text(ocr_resource, media):
    res = ocr_resource.read(load_rgb(media["text_render"]))
    words = res.text.upper()
    assert "HELLO" in words and "WORLD" in words and "2026" in words
    assert res.n_boxes >= 2
    assert 0.05 < res.ratio < 0.5  # two lines of 64-pt text on a 900x400 canvas
    for box in res.boxes:
        xs, ys = [p[0] for p in box["poly"]], [p[1] for p in box["poly"]]
        assert min(xs) >= -5 and max(xs) <= 905 and min(ys) >= -5 and max(ys) <= 405


@pytest.mark.slow
def test_photo_without_text_has_near_zero_ratio(ocr_resource, media):
    res = ocr_resource.read(load_rgb(media["astronaut"]))
    assert res.ratio < 0.01


@pytest.mark.slow
def test_text_heavy_render_fails_default_threshold(ocr_resource, media):
    res = ocr_resource.read(load_rgb(media["text_heavy"]))
    assert res.ratio > 0.3, res
    assert "MEME" in res.text.upper()


@pytest.mark.slow
def test_large_image_is_shrunk_and_boxes_scaled_back(ocr_resource):
    from resources.ocr import OCRResource

    big = np.asarray(text_render(("BIG SIGN",), size=(2400, 600), font_size=200))
    small_side = OCRResource(model_dir=ocr_resource.model_dir, gpu=False, max_side=800)
    res = small_side.read(big)
    assert (res.width, res.height) == (2400, 600)
    assert "SIGN" in res.text.upper()
    xs = [p[0] for b in res.boxes for p in b["poly"]]
    assert max(xs) > 800  # coordinates are in the original 2400-px frame, not the 800-px copy
    assert 0.1 < res.ratio < 0.6


def test_spread_clip_frames_caps_each_clip_and_keeps_other_frames():
    import pandas as pd

    from forge.media.ocr import spread_clip_frames

    clip = [{"frame_id": f"c1_f{i:03d}", "kind": "clip_frame", "clip_id": "c1", "frame_index": i} for i in range(32)]
    other = [
        {"frame_id": "img_1", "kind": "image", "clip_id": None, "frame_index": 0},
        {"frame_id": "pool_1", "kind": "pool_frame", "clip_id": None, "frame_index": 0},
    ]
    out = spread_clip_frames(pd.DataFrame(clip + other), 8)
    picked = sorted(out[out["kind"] == "clip_frame"]["frame_index"])
    assert len(picked) == 8 and picked[0] == 0 and picked[-1] == 31  # evenly spread, ends included
    assert {"img_1", "pool_1"} <= set(out["frame_id"])
    assert len(spread_clip_frames(pd.DataFrame(clip), 0)) == 32
