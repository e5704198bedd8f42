"""The offline demo has Hummus boxes to review: the stub's placeholder boxes (numbers outside the
image) are scaled into the image in lenient (stub-only) mode, still reported as a problem, and
become the items' ``labels.boxes``; a real reply's box outside the image is still refused."""

import json
from pathlib import Path

import yaml

from assets.recipes.hummus.logic import annotations as A
from assets.recipes.hummus.logic import items
from forge.llm.stub import placeholder

PROMPT = Path(__file__).resolve().parents[3] / "assets" / "recipes" / "hummus" / "prompts" / "annotate.yaml"


def test_stub_annotations_carry_boxes_inside_the_image():
    schema = yaml.safe_load(PROMPT.read_text())["schema"]
    with_boxes = 0
    for seed in range(20):
        reply = {**placeholder(schema, f"demo-{seed}"), "verdict": "Yes"}
        ann, problems = A.validate_annotation(reply, "a caption", 640, 480, lenient=True)
        assert ann is not None and A.BOX_OUT_OF_BOUNDS in problems.codes  # still reported
        for r in ann.regions:
            top, left, h, w = r.norm_tlhw
            assert min(top, left) >= 0 and top + h <= 1 + 1e-6 and left + w <= 1 + 1e-6 and h > 0 and w > 0
        with_boxes += bool(ann.regions)
        row = {"verdict": "Yes", "width": 640, "height": 480, "path": "media/x.png", "frame_id": "f", "item_id": "i"}
        ann_row = {
            **row,
            "annotation_id": f"a{seed}",
            "caption": "a caption",
            "source": "demo",
            "batch": "b",
            "backend": "stub",
            "model": "stub",
            "prompt_hash": "p",
        }
        regions = [
            {
                "region_index": i,
                "label": r.label,
                **{f"box_norm_{k}": v for k, v in zip(("top", "left", "height", "width"), r.norm_tlhw, strict=True)},
                **{f"box_px_{k}": v for k, v in zip(("x0", "y0", "x1", "y1"), (r.x0, r.y0, r.x1, r.y1), strict=True)},
            }
            for i, r in enumerate(ann.regions)
        ]
        built = items.build_items(ann_row, regions)
        assert bool(json.loads(built[0]["labels"])["boxes"]) == bool(ann.regions)
    assert with_boxes == 20  # every placeholder Yes annotation has a box to move in review
    real, problems = A.validate_annotation(
        {**reply, "regions": [{"label": "car", "box": [0.9, 0.0, 0.5, 0.4]}]}, "a caption", 640, 480
    )
    assert real is None and A.BOX_OUT_OF_BOUNDS in problems.codes  # not stub output: refused as before
