"""One reason code for one failure: a refused connection is ``connection_failed`` whether a
video URL or a table's image URL met it (and a timeout is ``timeout`` in both)."""

from __future__ import annotations

import socket
import urllib.error
from pathlib import Path

import pytest

from forge.media.download import DownloadSettings, Rejected, fetch_video
from forge.media.images import ImageReject, ImageSettings, image_frame
from forge.media.policy import IngestPolicy
from forge.media.sources import SourceItem, SourceSpec, classify_error

LOOPBACK = IngestPolicy(allowed_hosts=("127.0.0.1",))


@pytest.fixture
def refusing_url() -> str:
    """A loopback port nothing listens on: connecting is refused (ECONNREFUSED)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _video_reason(url: str, tmp_path: Path) -> str:
    item = SourceItem("vid_c", "t", "video", "url", url=url, batch="t-0000")
    settings = DownloadSettings(socket_timeout_s=3, retries=0, policy=LOOPBACK)
    res = fetch_video(item, SourceSpec(name="t", type="urls"), tmp_path, tmp_path / "media", settings)
    assert isinstance(res, Rejected), res
    return res.reason


def _image_reason(url: str, tmp_path: Path) -> str:
    item = {"item_id": "img_c", "path": None, "url": url, "caption": None}
    with pytest.raises(ImageReject) as err:
        image_frame(item, tmp_path / "img", tmp_path, ImageSettings(policy=LOOPBACK, fetch_timeout_s=3))
    return err.value.reason


def test_refused_connection_has_one_reason_for_videos_and_images(refusing_url, tmp_path):
    video = _video_reason(f"{refusing_url}/clip.mp4", tmp_path)
    image = _image_reason(f"{refusing_url}/photo.jpg", tmp_path)
    assert video == image == "connection_failed"


def test_timeout_has_one_reason_for_videos_and_images(tmp_path):
    with socket.socket() as srv:  # accepts, never answers
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        url = f"http://127.0.0.1:{srv.getsockname()[1]}"
        assert _image_reason(f"{url}/photo.jpg", tmp_path) == "timeout"
        assert _video_reason(f"{url}/clip.mp4", tmp_path) == "timeout"


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")), "connection_failed"),
        (urllib.error.URLError(ConnectionResetError(104, "reset by peer")), "connection_failed"),
        (urllib.error.URLError(socket.gaierror(-2, "Name or service not known")), "connection_failed"),
        (urllib.error.URLError(TimeoutError("timed out")), "timeout"),
        (urllib.error.HTTPError("http://h/x", 404, "Not Found", {}, None), "not_found"),
        (urllib.error.HTTPError("http://h/x", 403, "Forbidden", {}, None), "download_failed"),
    ],
)
def test_network_errors_are_classified_by_their_socket_error(exc, reason):
    assert classify_error(exc)[0] == reason


def test_a_socket_error_chained_under_a_library_error_counts():
    try:
        try:
            raise ConnectionRefusedError(111, "refused")
        except OSError as inner:
            raise RuntimeError("Unable to download webpage") from inner
    except RuntimeError as exc:
        assert classify_error(exc)[0] == "connection_failed"
