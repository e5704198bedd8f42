"""Bad input: every odd frame is decoded to RGB or rejected with a reason, alone."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from forge.vision.images import LoadedImage, LoadError, load_image, prefetch


def _save(tmp_path, name, im, **kw):
    p = tmp_path / name
    im.save(p, **kw)
    return p


@pytest.mark.parametrize(
    "mode,fmt",
    [("L", "PNG"), ("LA", "PNG"), ("RGBA", "PNG"), ("P", "PNG"), ("CMYK", "JPEG"), ("I;16", "PNG"), ("1", "PNG")],
)
def test_odd_modes_become_rgb(tmp_path, mode, fmt):
    im = Image.new(mode, (40, 30))
    p = _save(tmp_path, f"x.{fmt.lower()}", im, format=fmt)
    out = load_image(p)
    assert isinstance(out, LoadedImage), out
    assert out.rgb.shape == (30, 40, 3) and out.rgb.dtype == np.uint8
    assert (out.orig_width, out.orig_height, out.scale) == (40, 30, 1.0)


def test_transparent_rgba_is_composited_on_white(tmp_path):
    p = _save(tmp_path, "t.png", Image.new("RGBA", (20, 20), (255, 0, 0, 0)))
    assert load_image(p).rgb[0, 0].tolist() == [255, 255, 255]


def test_cmyk_colour_is_converted(tmp_path):
    p = _save(tmp_path, "c.jpg", Image.new("CMYK", (32, 32), (0, 255, 255, 0)), quality=100)  # red in CMYK
    r, g, b = load_image(p).rgb[16, 16].tolist()
    assert r > 200 and g < 60 and b < 60


def test_one_pixel_is_rejected(tmp_path):
    out = load_image(_save(tmp_path, "one.png", Image.new("RGB", (1, 1))))
    assert isinstance(out, LoadError) and out.reason == "too_small"


@pytest.mark.parametrize("payload", [b"not an image at all", b"\x89PNG\r\n\x1a\n" + b"\0" * 40])
def test_undecodable_is_rejected(tmp_path, payload):
    p = tmp_path / "bad.png"
    p.write_bytes(payload)
    out = load_image(p)
    assert isinstance(out, LoadError) and out.reason == "undecodable" and out.error_class


def test_truncated_jpeg_is_rejected(tmp_path, photos):
    data = photos["bus"].read_bytes()
    p = tmp_path / "trunc.jpg"
    p.write_bytes(data[: len(data) // 3])
    out = load_image(p)
    assert isinstance(out, LoadError) and out.reason == "undecodable"


def test_missing_file(tmp_path):
    out = load_image(tmp_path / "nope.jpg")
    assert isinstance(out, LoadError) and out.reason == "missing_file"


def test_declared_size_over_limit_is_rejected_before_decoding(tmp_path):
    p = _save(tmp_path, "big.png", Image.new("RGB", (100, 100)))
    out = load_image(p, max_pixels=5_000)
    assert isinstance(out, LoadError) and out.reason == "too_large"


def test_very_large_jpeg_is_downscaled(tmp_path):
    # 12000x12000 = 144 MP: above PIL's 89 MP bomb warning; decoded via libjpeg draft scaling.
    big = Image.new("L", (12000, 12000), 90)
    big.paste(255, (6000, 0, 12000, 12000))  # right half white, to check geometry survives
    p = _save(tmp_path, "huge.jpg", big, quality=70)
    del big
    out = load_image(p, max_side=1280)
    assert isinstance(out, LoadedImage)
    assert max(out.rgb.shape[:2]) <= 1280
    assert (out.orig_width, out.orig_height) == (12000, 12000)
    assert out.scale == pytest.approx(12000 / out.rgb.shape[1])
    assert out.rgb[10, 10, 0] < 120 and out.rgb[10, -10, 0] > 230


def test_prefetch_keeps_order_and_isolates_failures(tmp_path, photos):
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"garbage")
    items = [("a", photos["bus"]), ("b", bad), ("c", photos["coffee"]), ("d", photos["astronaut"])]
    got = list(prefetch(items, workers=3, ahead=2))
    assert [g.key for g in got] == ["a", "b", "c", "d"]
    assert [type(g.result).__name__ for g in got] == ["LoadedImage", "LoadError", "LoadedImage", "LoadedImage"]


def test_importing_ultralytics_through_forge_restores_pillow_open(tmp_path):
    """Ultralytics patches PIL.Image.open (pi-heif install on unknown files); we undo it."""
    from PIL import Image, UnidentifiedImageError

    from forge.vision.offline import import_ultralytics

    import_ultralytics()
    p = tmp_path / "junk.bin"
    p.write_bytes(b"definitely not an image")
    with pytest.raises(UnidentifiedImageError):
        Image.open(p)
