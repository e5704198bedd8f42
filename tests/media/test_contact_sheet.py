"""The contact sheet: small, captioned, shapes drawn, nothing to show handled."""

import base64
import io
import json

import numpy as np
import pandas as pd
from PIL import Image

from forge.media.contact_sheet import MAX_TILES, Shape, Tile, markdown, png_bytes, render, strip
from forge.media.sheets import item_caption, item_tiles, ocr_shapes, ocr_tiles


def _noise(w=320, h=240, seed=0):
    return Image.fromarray(np.random.default_rng(seed).integers(0, 255, (h, w, 3), dtype=np.uint8))


def _flat(w=320, h=240, colour=(90, 120, 150)):
    return Image.new("RGB", (w, h), colour)


def test_empty_input_gives_no_picture_and_says_so():
    assert render([]) is None and png_bytes([]) is None
    assert markdown([]) == "_no pictures_"


def test_tiles_are_capped_and_the_sheet_fits_its_byte_budget():
    tiles = [Tile(images=[_noise(seed=i)], caption=f"frame {i}") for i in range(30)]
    sheet = render(tiles, thumb=100, columns=4)
    assert sheet is not None
    assert sheet.width < 4 * 120 and sheet.height < (MAX_TILES // 4 + 1) * 200  # 12 tiles, 3 rows of 4
    png = png_bytes(tiles, max_bytes=60_000)
    assert png is not None and len(png) <= 60_000  # noise compresses badly: thumbnails were shrunk
    assert Image.open(io.BytesIO(png)).format == "PNG"


def test_markdown_embeds_the_png_as_a_data_uri():
    md = markdown([Tile(images=[_flat()], caption="a")], alt="frames of b1")
    assert md.startswith("![frames of b1](data:image/png;base64,")
    raw = base64.b64decode(md.split(",", 1)[1].rstrip(")"))
    assert Image.open(io.BytesIO(raw)).size[0] > 0


def test_caption_is_drawn_under_the_thumbnail():
    blank = render([Tile(images=[_flat()], caption="")], thumb=120)
    captioned = render([Tile(images=[_flat()], caption="person1 0.91")], thumb=120)
    a, b = np.asarray(blank), np.asarray(captioned)
    assert a.shape == b.shape
    below = slice(126, a.shape[0])  # the caption band under the 120 px thumbnail
    assert (a[below] == 255).all() and (b[below] < 128).any()


def test_boxes_change_the_pixels_inside_the_thumbnail_only_where_drawn():
    plain = np.asarray(render([Tile(images=[_flat()])], thumb=160))
    boxed = np.asarray(render([Tile(images=[_flat()], shapes=[Shape([(40, 40), (200, 160)], "SALE")])], thumb=160))
    diff = (plain != boxed).any(axis=2)
    assert diff.sum() > 100
    ys, xs = np.nonzero(diff)
    assert xs.max() < 6 + 160 and ys.max() < 6 + 160  # inside the thumbnail, not in the caption band


def test_missing_media_is_a_grey_tile_not_an_error(tmp_path):
    items = pd.DataFrame([{"question": "Why?", "options": ["a", "b"], "answer": "B", "media_paths": ["nowhere.jpg"]}])
    tiles = item_tiles(items, tmp_path)
    assert len(tiles) == 1 and tiles[0].images == []
    assert render(tiles) is not None


def test_item_tiles_show_image_strip_question_and_starred_answer(tmp_path):
    for i in range(3):
        _flat(colour=(i * 60, 0, 0)).save(tmp_path / f"f{i}.jpg")
    items = pd.DataFrame(
        [
            {
                "question": "What is the joke?",
                "options": ["a pun", "irony"],
                "answer": "B",
                "media_paths": [f"f{i}.jpg" for i in range(3)],
            }
        ]
    )
    (tile,) = item_tiles(items, tmp_path)
    assert len(tile.images) == 1 and tile.images[0].width > 3 * 320 * 0.9  # three frames side by side
    assert tile.caption.splitlines() == ["What is the joke?", " A. a pun", "*B. irony"]
    assert item_caption("q", ["x", "y"], "x").splitlines()[1] == "*A. x"


def test_ocr_tiles_draw_the_boxes_most_text_first(tmp_path):
    _flat().save(tmp_path / "a.jpg")
    _flat().save(tmp_path / "b.jpg")
    poly = [[10, 10], [100, 10], [100, 40], [10, 40]]
    tr = pd.DataFrame(
        [
            {"frame_id": "a", "ratio": 0.05, "passes": True, "text": "", "boxes": "[]"},
            {
                "frame_id": "b",
                "ratio": 0.6,
                "passes": False,
                "text": "BUY",
                "boxes": json.dumps([{"poly": poly, "text": "BUY"}]),
            },
        ]
    )
    frames = pd.DataFrame({"frame_id": ["a", "b"], "path": ["a.jpg", "b.jpg"]})
    tiles = ocr_tiles(tr, frames, tmp_path)
    assert [t.caption.splitlines()[0] for t in tiles] == ["60.0% text · text-heavy", "5.0% text · kept"]
    assert ocr_shapes(tr["boxes"].iat[1])[0].label == "BUY" and tiles[1].shapes == []


def test_strip_puts_frames_side_by_side():
    s = strip([_flat(100, 50), _flat(200, 100)], height=50)
    assert s.size == (100 + 100 + 2, 50)
    assert strip([]) is None
