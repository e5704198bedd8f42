"""The two rooms without a server: blind media get bytes of their own (docs/review.md, "Two
rooms"); a served folder keeps regular files only; `make review` runs both instances and Ctrl-C
(or one instance ending) stops both; the blind instance's settings and keys."""

from __future__ import annotations

import _thread
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import av
import imageio_ffmpeg
import pytest
from PIL import Image

from forge.evals.blind_media import BlindMediaError, reencode, suffix_for
from forge.people import server as review_server
from forge.people.blind_room import blind_key, blind_server
from forge.people.config import server
from forge.people.links import QUARANTINE, refuse_links


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_images_are_re_encoded_without_metadata_and_keep_their_pixels(tmp_path):
    png, jpg = tmp_path / "a.png", tmp_path / "b.jpg"
    im = Image.new("RGB", (40, 30), (200, 30, 90))
    im.putpixel((3, 4), (1, 2, 3))
    info = Image.Exif()
    info[0x010E] = "item ii7 of the test split"  # ImageDescription
    im.save(png, pnginfo=None)
    im.save(jpg, quality=95, exif=info)
    for src in (png, jpg):
        dst = tmp_path / f"out{suffix_for(src)}"
        reencode(src, dst)
        assert sha(dst) != sha(src) and not dst.is_symlink() and dst.stat().st_nlink == 1
        with Image.open(dst) as out:
            assert not out.getexif() and "exif" not in out.info and "icc_profile" not in out.info
            if src is png:  # lossless
                assert out.convert("RGB").tobytes() == im.tobytes()
    assert b"ii7" in jpg.read_bytes() and b"ii7" not in (tmp_path / "out.jpg").read_bytes()
    bad = tmp_path / "c.png"
    bad.write_bytes(b"not an image")
    with pytest.raises(BlindMediaError, match="not a readable image"):
        reencode(bad, tmp_path / "c-out.png")
    assert not (tmp_path / "c-out.png").exists()


def test_a_clip_is_re_muxed_with_its_frames_and_other_bytes(tmp_path):
    src, dst = tmp_path / "clip.mp4", tmp_path / "out.mp4"
    cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=5:duration=1"]
    subprocess.run([*cmd, "-metadata", "title=item vague_12", "-pix_fmt", "yuv420p", str(src)], check=True)
    reencode(src, dst)
    assert sha(dst) != sha(src) and b"vague_12" not in dst.read_bytes()

    def frames(p: Path) -> list[bytes]:
        with av.open(str(p)) as c:
            return [bytes(pk) for pk in c.demux(video=0) if pk.size]

    assert frames(dst) == frames(src)  # streams copied, not re-encoded


def test_a_clip_shared_by_items_is_muxed_once_and_copied_for_the_others(tmp_path, monkeypatch):
    from forge.evals import blind_media

    src = tmp_path / "clip.mp4"
    cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=5:duration=1"]
    subprocess.run([*cmd, "-pix_fmt", "yuv420p", str(src)], check=True)
    muxed = []
    real = blind_media._video
    monkeypatch.setattr(blind_media, "_video", lambda *a: muxed.append(a) or real(*a))
    outs = [tmp_path / f"k{i}.mp4" for i in range(3)]
    for dst in outs:
        reencode(src, dst)
    assert len(muxed) == 1  # one ffmpeg start for the three items' copies
    assert {sha(d) for d in outs} == {sha(outs[0])} and sha(outs[0]) != sha(src)
    assert all(d.stat().st_mode & 0o777 == 0o600 and d.stat().st_nlink == 1 for d in outs)
    outs[0].write_bytes(b"changed")  # the first copy is no longer what was made: the next is muxed afresh
    reencode(src, tmp_path / "k3.mp4")
    assert len(muxed) == 2 and sha(tmp_path / "k3.mp4") == sha(outs[1])


def test_links_in_served_folders_are_moved_out_and_reported(tmp_path):
    data = tmp_path / "data"
    (data / "media" / "images").mkdir(parents=True)
    (data / "review" / "blind" / "vague").mkdir(parents=True)
    (data / "review" / "admin.json").write_text('{"token": "t"}')
    ok = data / "media" / "images" / "a.png"
    ok.write_bytes(b"png")
    os.link(ok, data / "media" / "images" / "a-again.png")  # our own hard link: a regular file
    (data / "media" / "images" / "pw.png").symlink_to("/etc/passwd")
    (data / "review" / "blind" / "vague" / "etc").symlink_to("/etc", target_is_directory=True)
    os.link(data / "review" / "admin.json", data / "media" / "token.png")
    os.mkfifo(data / "media" / "pipe.png")
    out = refuse_links(data)
    got = {r.path: r.reason for r in out}
    assert got == {
        "media/images/pw.png": "symlink",
        "review/blind/vague/etc": "symlink",
        "media/token.png": "hard_link_to_secret",
        "media/pipe.png": "not_a_regular_file",
    }
    assert ok.read_bytes() == b"png" and (data / "media" / "images" / "a-again.png").is_file()
    q = data / QUARANTINE
    assert oct(q.stat().st_mode & 0o777) == "0o700"
    moved = {r.path: data / r.moved_to for r in out}
    assert moved["media/images/pw.png"].is_symlink() and os.readlink(moved["media/images/pw.png"]) == "/etc/passwd"
    assert (data / "review" / "admin.json").read_text() == '{"token": "t"}'  # the target stays
    lines = [json.loads(x) for x in (q / "refused.jsonl").read_text().splitlines()]
    assert {r["path"] for r in lines} == set(got) and oct((q / "refused.jsonl").stat().st_mode & 0o777) == "0o600"
    assert refuse_links(data) == []  # nothing left to refuse


def test_blind_instance_settings_and_keys(tmp_path, monkeypatch):
    for k in ("SUBTEXT_REVIEW_PORT", "SUBTEXT_REVIEW_BLIND_PORT", "SUBTEXT_REVIEW_URL", "SUBTEXT_REVIEW_BLIND_URL"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("SUBTEXT_REVIEW_CONFIG", str(tmp_path / "none.yaml"))
    monkeypatch.setenv("SUBTEXT_REVIEW_PORT", "18080")
    r, b = server(tmp_path, create=True), blind_server(tmp_path, create=True)
    assert b.port == 18081 and b.url.endswith(":18081") and b.home == (tmp_path / "review" / "blind-studio").resolve()
    assert b.token != r.token and b.password != r.password and b.secret_key != r.secret_key
    assert b.document_root == (tmp_path / "review" / "blind").resolve()
    monkeypatch.setenv("SUBTEXT_REVIEW_BLIND_PORT", "19000")
    assert blind_server(tmp_path).port == 19000
    monkeypatch.delenv("SUBTEXT_REVIEW_BLIND_PORT")
    assert blind_server(tmp_path).port == 18081  # a client finds the started one
    k = blind_key(tmp_path, "task", "vague", "v1", "r1")
    assert k == blind_key(tmp_path, "task", "vague", "v1", "r1") and k != blind_key(
        tmp_path / "other", "task", "vague", "v1", "r1"
    )
    assert oct((b.home / "task_keys.json").stat().st_mode & 0o777) == "0o600"


def _dummy(monkeypatch, tmp_path, lives: list[float]) -> list[subprocess.Popen]:
    """Each launched 'server' is a sleeping child (seconds from ``lives``)."""
    started: list[subprocess.Popen] = []

    def launch(s, out):
        p = subprocess.Popen(
            review_server.with_default_signals(
                [sys.executable, "-c", f"import time; time.sleep({lives[len(started)]})"]
            ),
            stdout=out,
        )
        started.append(p)
        return p

    monkeypatch.setattr(review_server, "launch", launch)
    monkeypatch.setattr(review_server, "WATCH_S", 0.2)
    return started


def test_make_review_runs_both_and_ctrl_c_stops_both(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBTEXT_REVIEW_CONFIG", str(tmp_path / "none.yaml"))
    started = _dummy(monkeypatch, tmp_path, [60, 60])
    servers = [server(tmp_path, create=True), blind_server(tmp_path, create=True)]
    # A test worker may run with another SIGINT handler (pytest-xdist's): the one a terminal gives
    # `make review` raises KeyboardInterrupt, and without it this test waited out the 60 s children.
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        t0 = time.monotonic()
        threading.Timer(1.0, _thread.interrupt_main).start()
        assert review_server.serve(servers, tmp_path) == 0
    finally:
        signal.signal(signal.SIGINT, old)
    assert len(started) == 2 and all(p.poll() is not None for p in started)
    assert time.monotonic() - t0 < 30  # Ctrl-C stopped them, not the children's own 60 s


def test_one_instance_ending_stops_the_other(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBTEXT_REVIEW_CONFIG", str(tmp_path / "none.yaml"))
    started = _dummy(monkeypatch, tmp_path, [0.3, 60])
    servers = [server(tmp_path, create=True), blind_server(tmp_path, create=True)]
    assert review_server.serve(servers, tmp_path) == 0  # the first exited with 0
    assert all(p.poll() is not None for p in started)


def test_a_server_stops_on_sigterm_even_when_its_parent_ignores_and_blocks_it():
    """Ignored and blocked signals survive exec; the launch shim resets both (a test worker once
    had SIGTERM blocked, and every Label Studio stop then waited out its timeout)."""
    probe = (
        "import signal; print(signal.getsignal(signal.SIGTERM), sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])))"
    )
    old_handler = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        plain = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
        shimmed = subprocess.run(
            review_server.with_default_signals([sys.executable, "-c", probe]),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        signal.signal(signal.SIGTERM, old_handler)
    assert plain.split()[0] == str(int(signal.SIG_IGN))  # what a plain child inherits (SIG_IGN)
    assert shimmed.split()[0] == str(int(signal.SIG_DFL)) and shimmed.strip().endswith("[]")
