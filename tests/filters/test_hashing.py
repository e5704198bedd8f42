"""Perceptual hashes of real photos and their re-posted variants."""

import numpy as np
import pytest
from PIL import UnidentifiedImageError

from forge.media.hashing import FrameHash, hamming, hash_image, hash_many, hex_to_int64, int64_to_hex, popcount64


def _d(a: str, b: str) -> int:
    return bin(int(a, 16) ^ int(b, 16)).count("1")


def test_hex_int64_round_trip():
    for h in ["0000000000000000", "ffffffffffffffff", "8000000000000000", "7fffffffffffffff", "c3a5e1f00f1e5a3c"]:
        v = hex_to_int64(h)
        assert -(1 << 63) <= v < (1 << 63)
        assert int64_to_hex(v) == h
    assert hex_to_int64("ffffffffffffffff") == -1
    with pytest.raises(ValueError):
        hex_to_int64("1" + "0" * 16)


def test_vectorised_hamming_matches_python():
    rng = np.random.default_rng(0)
    a = rng.integers(-(1 << 63), (1 << 63) - 1, size=500, dtype=np.int64)
    b = rng.integers(-(1 << 63), (1 << 63) - 1, size=500, dtype=np.int64)
    want = [bin((int(x) ^ int(y)) & ((1 << 64) - 1)).count("1") for x, y in zip(a, b)]
    assert hamming(a, b).tolist() == want
    assert popcount64(np.array([0, 1, 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)).tolist() == [0, 1, 64]


def test_real_photos_hash_and_variants_stay_close(media):
    orig = hash_image(media["astronaut"])
    assert isinstance(orig, FrameHash) and (orig.width, orig.height) == (512, 512)
    assert len(orig.phash) == 16 and len(orig.dhash) == 16
    assert orig.phash_int == hex_to_int64(orig.phash)
    # the same file hashes the same
    assert hash_image(media["astronaut"]) == orig
    for name in ("astronaut", "coffee", "rocket"):
        o = hash_image(media[name])
        for v in ("resized", "jpeg", "crop2", "watermark"):
            h = hash_image(media[f"{name}_{v}"])
            # either hash within 8 bits: the default `either` rule with threshold 8
            assert min(_d(o.phash, h.phash), _d(o.dhash, h.dhash)) <= 8, (name, v)
    resized = hash_image(media["astronaut_resized"])
    assert (resized.width, resized.height) == (256, 256)


def test_unrelated_photos_are_far_apart(media):
    names = ["astronaut", "coffee", "page", "text", "hopper", "bus", "chelsea", "rocket"]
    hs = {n: hash_image(media[n]) for n in names}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert _d(hs[a].phash, hs[b].phash) > 16 and _d(hs[a].dhash, hs[b].dhash) > 16, (a, b)


@pytest.mark.parametrize("name", ["truncated", "not_an_image", "empty"])
def test_broken_files_raise(media, name):
    with pytest.raises((OSError, UnidentifiedImageError, ValueError)):
        hash_image(media[name])


def test_hash_many_returns_exceptions_in_place(media):
    paths = [media["coffee"], media["truncated"], media["hopper"], media["not_an_image"]]
    for workers in (1, 2):
        out = hash_many(paths, workers=workers)
        assert [type(r) is FrameHash for r in out] == [True, False, True, False]
        assert out[0] == hash_image(media["coffee"])


def test_broken_file_reject_class_survives_ultralytics_patch(media, monkeypatch):
    """Ultralytics monkey-patches PIL.Image.open on import (vision stage, same process)."""
    monkeypatch.setenv("YOLO_OFFLINE", "1")
    monkeypatch.setenv("YOLO_AUTOINSTALL", "false")
    import ultralytics.utils.patches  # noqa: F401 - applies the patch

    with pytest.raises(UnidentifiedImageError):
        hash_image(media["not_an_image"])
    assert hash_image(media["coffee"]).width == 600
