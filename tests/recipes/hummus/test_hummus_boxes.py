"""ImageBbox replies in the common box conventions convert to the same normalised
[top, left, height, width]; ambiguous replies follow the named rules; unreadable ones are a
failure with a reason and score 0 (issue 17)."""

import json

import pytest

from assets.recipes.hummus.logic.boxes import BoxError, parse_box
from forge.benchmarks.registry import get
from forge.evals import requests as rq
from forge.evals.requests import EvalRequest
from forge.evals.scoring import similarity_scores
from forge.llm.types import LLMRequest

SIZE = (640, 480)  # width, height
GOLD = [0.25, 0.125, 0.5, 0.375]  # top, left, height, width = x 80..320 px, y 120..360 px

CONVENTIONS = [  # (reply, convention recorded)
    ("shark: [0.25, 0.125, 0.5, 0.375]", "tlhw_unit"),  # the requested format
    ("shark: [x1, y1, x2, y2] = [0.125, 0.25, 0.5, 0.75]", "xyxy_unit"),
    ("shark: (0.125, 0.25), (0.5, 0.75)", "xyxy_unit"),
    ("shark: [80, 120, 320, 360] as [x_min, y_min, x_max, y_max] in pixels", "xyxy_pixels"),
    ("shark: 80px, 120px, 320px, 360px (x1, y1, x2, y2)", "xyxy_pixels"),
    ("shark: (80, 120), (320, 360) px", "xyxy_pixels"),
    ("shark: [x, y, w, h] = [80, 120, 240, 240] px", "xywh_pixels"),
    ('{"label": "shark", "x": 80, "y": 120, "width": 240, "height": 240, "unit": "pixels"}', "xywh_pixels"),
    ("<|object_ref_start|>shark<|object_ref_end|><|box_start|>(125,250),(500,750)<|box_end|>", "xyxy_thousand"),
    ("shark: [125, 250, 500, 750] ([x1, y1, x2, y2], 0-1000)", "xyxy_thousand"),
    ("shark: [250, 125, 750, 500] as [ymin, xmin, ymax, xmax]", "yxyx_thousand"),
    ('shark: {"top": 0.25, "left": 0.125, "height": 0.5, "width": 0.375}', "tlhw_unit"),
    ("shark: x1=0.125, y1=0.25, x2=0.5, y2=0.75", "xyxy_unit"),
]


@pytest.mark.parametrize("reply,convention", CONVENTIONS)
def test_each_convention_converts_to_the_same_normalised_box(reply, convention):
    b = parse_box(reply, SIZE)
    assert b.box == pytest.approx(GOLD) and b.convention == convention and b.label == "shark"


def test_pixels_above_1000_need_the_image_size():
    b = parse_box("shark: (200, 300), (1600, 900)", (2000, 1000))  # 1600 > 1000: pixels
    assert b.convention == "xyxy_pixels" and b.box == pytest.approx([0.3, 0.1, 0.6, 0.7]) and "above_1000" in b.rule
    with pytest.raises(BoxError) as e:
        parse_box("shark: (200, 300), (800, 1200)")
    assert e.value.reason == "box_needs_image_size"


def test_ambiguous_order_follows_the_named_rule():
    reply = "shark: [0.125, 0.25, 0.5, 0.75]"  # fits both [top, left, h, w] and [x1, y1, x2, y2]
    b = parse_box(reply, SIZE)
    assert b.order == "tlhw" and b.box == pytest.approx([0.125, 0.25, 0.5, 0.75]) and "requested" in b.rule
    x = parse_box(reply, SIZE, order_rule="xyxy")
    assert x.order == "xyxy" and x.box == pytest.approx(GOLD)
    # the requested order would leave the image (left + width > 1): read as x1, y1, x2, y2
    f = parse_box("shark: [0.125, 0.3, 0.5, 0.75]", SIZE)
    assert f.order == "xyxy" and f.box == pytest.approx([0.3, 0.125, 0.45, 0.375])


def test_ambiguous_scale_follows_the_named_rule():
    reply = "shark: (80, 120), (320, 360)"  # fits the 0..1000 grid and the 640x480 image
    t = parse_box(reply, SIZE)
    assert t.scale == "thousand" and t.box == pytest.approx([0.12, 0.08, 0.24, 0.24])
    assert "hummus_box_scale=thousand" in t.rule
    p = parse_box(reply, SIZE, scale_rule="pixels")
    assert p.scale == "pixels" and p.box == pytest.approx(GOLD)
    # does not fit the image in pixels (y 360..900 > 480): the 0..1000 grid whatever the rule
    assert parse_box("shark: (80, 360), (320, 900)", SIZE, scale_rule="pixels").scale == "thousand"
    with pytest.raises(ValueError):
        parse_box(reply, SIZE, scale_rule="guess")


@pytest.mark.parametrize(
    "reply,reason",
    [
        ("", "empty"),
        ("the shark near the top left", "no_box"),
        ("shark: [0.1, 0.2, 1.3, 0.4]", "box_out_of_range"),  # a unit box leaving the image, not 0..1000
        ("shark: [0.1, 0.2, 0.0, 0.4]", "box_out_of_range"),
        ("shark: [-0.1, 0.2, 0.3, 0.4]", "box_out_of_range"),
        ("shark: (900, 900), (100, 100)", "box_out_of_range"),
    ],
)
def test_unreadable_box_is_a_failure_with_reason(reply, reason):
    with pytest.raises(BoxError) as e:
        parse_box(reply, SIZE)
    assert e.value.reason == reason


def _er():
    labels = {"boxes": [{"label": "shark", "box_norm_tlhw": GOLD}], "image_width": 640, "image_height": 480}
    gold = "shark: [0.250, 0.125, 0.500, 0.375]"
    item = {
        "item_id": "hum_1",
        "benchmark": "hummus",
        "task": "image_box",
        "answer": gold,
        "labels": json.dumps(labels),
    }
    return EvalRequest(item, "box", None, gold, 0, LLMRequest("hum_1", None, {}), 1)


def _row(er, reply, options=None):
    e = rq.parse_reply(er, reply, options or {}, get("hummus"))
    row = {
        "benchmark": "hummus",
        "item_id": "hum_1",
        "task": "image_box",
        "status": "ok" if e.ok else "unparseable",
        "parse_method": e.method or e.reason,
        "detail": {"parsed": e.values} if e.values else {},
    }
    similarity_scores(get("hummus"), [row], {"hum_1": er.item}, None, {"iou": 0.5})
    return row


def test_eval_reads_converted_boxes_and_scores_unreadable_as_zero():
    er = _er()
    ok = _row(er, "<|object_ref_start|>shark<|object_ref_end|><|box_start|>(125,250),(500,750)<|box_end|>")
    assert ok["status"] == "ok" and ok["detail"]["parsed"]["convention"] == "xyxy_thousand"
    assert ok["score"] == pytest.approx(1.0) and ok["correct"] is True
    px = _row(er, "shark: (80, 120), (320, 360) pixels")
    assert px["detail"]["parsed"]["convention"] == "xyxy_pixels" and px["score"] == pytest.approx(1.0)
    bad = _row(er, "shark: [0.1, 0.2, 1.3, 0.4]")
    assert bad["status"] == "unparseable" and bad["parse_method"] == "box_out_of_range"
    assert bad["score"] == 0.0 and bad["correct"] is False
    # hummus_box_strict: only the literal Table 1 format is read
    strict = _row(er, "shark: (80, 120), (320, 360) pixels", {"hummus_box_strict": True})
    assert strict["status"] == "unparseable" and strict["score"] == 0.0
