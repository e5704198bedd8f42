"""Person indicators from boxes given directly: order, placement, legibility, the file."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from forge.vision.indicators import Box, annotate, font_size_for, layout_labels, order_boxes


def test_left_to_right_then_top_to_bottom():
    boxes = [Box(300, 10, 400, 200), Box(10, 300, 80, 400), Box(10, 20, 80, 120), Box(150, 0, 250, 90)]
    ordered = order_boxes(boxes)
    assert [(b.x1, b.y1) for b in ordered] == [(10, 20), (10, 300), (150, 0), (300, 10)]
    # independent of input order
    assert order_boxes(list(reversed(boxes))) == ordered
    labels = layout_labels(boxes, 640, 480)
    assert [i.label for i in labels] == ["person1", "person2", "person3", "person4"]
    assert [(i.box.x1, i.box.y1) for i in labels] == [(10, 20), (10, 300), (150, 0), (300, 10)]


@pytest.mark.parametrize("w,h", [(640, 480), (120, 90), (3840, 2160)])
def test_labels_stay_inside_the_image(w, h):
    boxes = [
        Box(0, 0, w * 0.3, h),
        Box(w * 0.7, h * 0.9, w, h),
        Box(w - 2, 0, w, 3),
        Box(w * 0.4, h * 0.4, w * 0.6, h * 0.6),
    ]
    for ind in layout_labels(boxes, w, h):
        x1, y1, x2, y2 = ind.label_box
        assert 0 <= x1 < x2 <= w and 0 <= y1 < y2 <= h, (ind.label, ind.label_box)


def test_label_sits_above_the_box_when_there_is_room_else_inside():
    above, inside = layout_labels([Box(100, 200, 200, 400), Box(300, 0, 400, 200)], 640, 480)
    assert above.label_box[3] == 200 and above.label_box[0] == 100
    assert inside.label_box[1] == 0


def test_font_follows_box_and_image():
    small, large = Box(0, 0, 30, 60), Box(0, 0, 400, 800)
    assert font_size_for(small, 1920, 1080) < font_size_for(large, 1920, 1080)
    # never unreadably small in a big frame, never huge in a small one
    assert font_size_for(small, 1920, 1080) >= round(0.018 * 1080)
    assert font_size_for(large, 640, 480) <= round(0.06 * 480)


def test_annotate_writes_labels_on_a_copy(tmp_path, photos):
    rgb = np.asarray(Image.open(photos["astronaut"]).convert("RGB"))
    boxes = [Box(300, 100, 480, 510, 0.9), Box(20, 60, 200, 500, 0.8)]
    out = tmp_path / "ind" / "f.jpg"
    inds = annotate(rgb, boxes, scale=1.0, out_path=out)
    assert out.exists() and not list(out.parent.glob(".*tmp*"))
    assert [(i.label, i.box.x1) for i in inds] == [("person1", 20), ("person2", 300)]
    img = np.asarray(Image.open(out).convert("RGB")).astype(int)
    assert img.shape == rgb.shape
    for ind in inds:  # the label background is drawn: pixels there changed a lot
        x1, y1, x2, y2 = ind.label_box
        diff = np.abs(img[y1:y2, x1:x2] - rgb[y1:y2, x1:x2].astype(int)).mean()
        assert diff > 30
    assert np.abs(img[5:40, 490:505] - rgb[5:40, 490:505]).mean() < 8  # away from boxes: untouched


def test_annotate_maps_original_boxes_onto_a_downscaled_frame(tmp_path):
    rgb = np.full((300, 400, 3), 40, dtype=np.uint8)  # decoded at 1/4 of a 1600x1200 original
    inds = annotate(rgb, [Box(800, 400, 1200, 1200)], scale=4.0, out_path=tmp_path / "s.jpg")
    assert inds[0].box == Box(800, 400, 1200, 1200)  # the table keeps original pixels
    x1, y1, x2, y2 = inds[0].label_box
    assert x1 == 200 and y2 == 100  # drawn at the decoded position, just above the box
