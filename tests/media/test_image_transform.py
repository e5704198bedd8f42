"""An image's ``transform`` names every change normalisation made, the EXIF rotation included
(forge/media/images.py): a stored image that differs from its file's pixel grid says why."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from forge.media.images import ImageSettings, image_frame


def _marked_jpeg(path, orientation: int | None, size=(96, 48)):
    """A wide image, white with a red block in its top-left corner, with that EXIF orientation."""
    w, h = size
    arr = np.full((h, w, 3), 255, np.uint8)
    arr[: h // 3, : w // 4] = (255, 0, 0)
    exif = Image.Exif()
    if orientation is not None:
        exif[0x0112] = orientation
    Image.fromarray(arr).save(path, quality=95, exif=exif)
    return path


def _red_corner(path) -> str:
    """Which corner of the stored image holds the red block."""
    arr = np.asarray(Image.open(path).convert("RGB")).astype(int)
    h, w = arr.shape[:2]
    corners = {
        "top-left": arr[: h // 8, : w // 8],
        "top-right": arr[: h // 8, -(w // 8) :],
        "bottom-left": arr[-(h // 8) :, : w // 8],
        "bottom-right": arr[-(h // 8) :, -(w // 8) :],
    }
    red = {k: float((v[..., 0] - v[..., 1]).mean()) for k, v in corners.items()}
    return max(red, key=red.get)


@pytest.mark.parametrize(
    ("orientation", "note", "size", "corner"),
    [
        (3, "EXIF orientation 3: rotated 180°", (96, 48), "bottom-right"),
        (6, "EXIF orientation 6: rotated 90° clockwise", (48, 96), "top-right"),
        (8, "EXIF orientation 8: rotated 90° counter-clockwise", (48, 96), "bottom-left"),
        (2, "EXIF orientation 2: mirrored left-right", (96, 48), "top-right"),
    ],
)
def test_exif_orientation_is_applied_and_recorded(tmp_path, orientation, note, size, corner):
    src = _marked_jpeg(tmp_path / "photo.jpg", orientation)
    row = image_frame({"item_id": "img_r", "path": str(src)}, tmp_path / "out", tmp_path, ImageSettings())
    assert row["transform"] == note
    assert (row["width"], row["height"]) == size
    assert _red_corner(tmp_path / row["path"]) == corner


@pytest.mark.parametrize("orientation", [None, 1])
def test_upright_image_has_no_transform(tmp_path, orientation):
    src = _marked_jpeg(tmp_path / "photo.jpg", orientation)
    row = image_frame({"item_id": "img_u", "path": str(src)}, tmp_path / "out", tmp_path, ImageSettings())
    assert row["transform"] is None and (row["width"], row["height"]) == (96, 48)
    assert _red_corner(tmp_path / row["path"]) == "top-left"


def test_rotation_and_downscale_are_both_recorded_in_order(tmp_path):
    src = _marked_jpeg(tmp_path / "photo.jpg", 6, size=(200, 100))
    row = image_frame({"item_id": "img_d", "path": str(src)}, tmp_path / "out", tmp_path, ImageSettings(max_side=100))
    assert row["transform"] == "EXIF orientation 6: rotated 90° clockwise; downscaled from 100x200 to 50x100"
    assert (row["width"], row["height"]) == (50, 100)
