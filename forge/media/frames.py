"""Frame sampling by seeking in one open container, sharpness, and the single-frame pool.

``sample_at`` opens the video once and, for each requested time (in order), seeks to
the keyframe before it only when the target is behind the decoder or more than
``seek_threshold_s`` ahead of it, then decodes forward to the first frame at or after the
target. 32 frames of a 30 s clip cost a few keyframe seeks instead of decoding ~900
frames, and no process is started per frame (see benchmarks/frame_sampling.py).

Sharpness is the variance of the Laplacian of the grey image, measured after scaling the
longer side to 512 px so one threshold fits every resolution.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import av
import cv2
import numpy as np

from forge.media.clips import ClipPlan
from forge.media.policy import VIDEO_DEMUXERS
from forge.versioning import sha256_bytes

BLUR_REFERENCE_SIDE = 512


@dataclass(frozen=True)
class FrameSettings:
    frames_per_clip: int = 32
    pool: bool = True
    pool_interval_s: float = 1.0  # candidate spacing for the pool
    pool_min_gap_s: float = 3.0  # no two pool frames closer than this (VAGUE: non-neighbouring)
    pool_max_per_video: int = 8
    blur_threshold: float = 60.0  # variance of Laplacian below this = blurry (pool frames dropped)
    seek_threshold_s: float = 1.0
    jpeg_quality: int = 92


@dataclass
class Sampled:
    requested_s: float
    timestamp_s: float
    image: np.ndarray  # RGB uint8


def blur_variance(rgb: np.ndarray) -> float:
    grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    h, w = grey.shape
    scale = BLUR_REFERENCE_SIDE / max(h, w)
    if scale < 1.0:
        grey = cv2.resize(grey, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)
    return float(cv2.Laplacian(grey, cv2.CV_64F).var())


def decode_threads() -> int:
    """Decoder threads: the CPUs this process was given, as ``OMP_NUM_THREADS`` says (a Ray worker
    sets it to the task's ``num_cpus``, so a 1-CPU task does not decode on every core of its
    node); 0, the codec's own choice (all cores), when it is unset or unreadable."""
    try:
        return max(0, int(os.environ.get("OMP_NUM_THREADS", "0")))
    except ValueError:
        return 0


def sample_at(path: str | Path, times: list[float], seek_threshold_s: float = 1.0) -> list[Sampled]:
    """Frames at ``times`` (seconds from the start of the video stream), in time order."""
    out: list[Sampled] = []
    if not times:
        return out
    with av.open(str(path), options={"format_whitelist": VIDEO_DEMUXERS}) as c:
        vs = c.streams.video[0]
        vs.thread_type = "AUTO"
        vs.codec_context.thread_count = decode_threads()
        tb = vs.time_base
        start = float(vs.start_time * tb) if vs.start_time is not None else 0.0
        rate = float(vs.average_rate or vs.guessed_rate or 25)
        eps = 0.5 / rate
        frames = None
        cur: av.VideoFrame | None = None
        cur_t = -1.0
        for t in sorted(times):
            if frames is None or t < cur_t - eps or t - cur_t > seek_threshold_s:
                c.seek(int((t + start) / tb), stream=vs, backward=True, any_frame=False)
                frames = c.decode(vs)
                cur, cur_t = None, -1.0
            if cur is None or cur_t < t - eps:
                for f in frames:
                    if f.pts is None:
                        continue
                    cur, cur_t = f, float(f.pts * tb) - start
                    if cur_t >= t - eps:
                        break
            if cur is None:  # past the end: nothing decodable from this keyframe on
                continue
            out.append(Sampled(t, max(0.0, cur_t), cur.to_ndarray(format="rgb24")))
    return out


def uniform_times(start_s: float, end_s: float, k: int) -> list[float]:
    """Centres of ``k`` equal slices of ``[start_s, end_s)``: no frame sits on a cut boundary."""
    d = (end_s - start_s) / k
    return [start_s + (i + 0.5) * d for i in range(k)]


def pool_times(duration_s: float, interval_s: float) -> list[float]:
    return [t for t in np.arange(interval_s / 2, duration_s, interval_s).tolist()]


def select_pool(
    candidates: list[tuple[float, float]], min_gap_s: float, max_n: int, threshold: float
) -> tuple[list[float], list[tuple[float, float]]]:
    """Greedy pick by sharpness: ``candidates`` are (time, blur_var). Returns the kept times
    (sorted) and the blurry (time, blur_var) pairs; candidates too close to a kept frame are
    simply not picked."""
    blurry = [(t, v) for t, v in candidates if v < threshold]
    sharp = sorted(((t, v) for t, v in candidates if v >= threshold), key=lambda x: (-x[1], x[0]))
    kept: list[float] = []
    for t, _ in sharp:
        if len(kept) >= max_n:
            break
        if all(abs(t - k) >= min_gap_s for k in kept):
            kept.append(t)
    return sorted(kept), blurry


def encode_jpeg(rgb: np.ndarray, quality: int) -> bytes:
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    return buf.tobytes()


def write_bytes_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@dataclass
class VideoFrames:
    rows: list[dict]
    blurry: list[tuple[str, float, float]]  # (candidate id, time, blur_var)


def replace_dir(stage: Path, final: Path) -> None:
    """Put a fully written folder in place of ``final``: two renames, so readers see the old
    files or the new ones, never a half-written or emptied folder (a crash leaves the old)."""
    old = final.with_name(f".{final.name}.{os.getpid()}.old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.replace(final, old)
    os.replace(stage, final)
    shutil.rmtree(old, ignore_errors=True)


def staging_dir(final: Path) -> Path:
    """A fresh sibling of ``final`` to write into before :func:`replace_dir`."""
    final.parent.mkdir(parents=True, exist_ok=True)
    stage = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    return stage


def frames_for_video(
    video_path: Path,
    video_id: str,
    duration_s: float,
    clips: list[ClipPlan] | list[dict],
    out_dir: Path,
    data_dir: Path,
    settings: FrameSettings,
) -> VideoFrames:
    """K uniform frames per clip plus the pool, from one pass over one open container."""
    wanted: dict[float, None] = {}
    per_clip: list[tuple[str, list[float]]] = []
    for cl in clips:
        cid, a, b = (
            (cl.clip_id, cl.start_s, cl.end_s)
            if isinstance(cl, ClipPlan)
            else (cl["clip_id"], cl["start_s"], cl["end_s"])
        )
        ts = [round(t, 4) for t in uniform_times(float(a), float(b), settings.frames_per_clip)]
        per_clip.append((cid, ts))
        wanted.update(dict.fromkeys(ts))
    ptimes = [round(t, 4) for t in pool_times(duration_s, settings.pool_interval_s)] if settings.pool else []
    wanted.update(dict.fromkeys(ptimes))
    got = {s.requested_s: s for s in sample_at(video_path, sorted(wanted), settings.seek_threshold_s)}

    out_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    blur_cache: dict[float, float] = {}

    def blur(t: float) -> float:
        if t not in blur_cache:
            blur_cache[t] = blur_variance(got[t].image)
        return blur_cache[t]

    def emit(frame_id: str, t: float, kind: str, clip_id: str | None, idx: int) -> None:
        s = got[t]
        data = encode_jpeg(s.image, settings.jpeg_quality)
        path = out_dir / f"{frame_id}.jpg"
        write_bytes_atomic(path, data)
        h, w = s.image.shape[:2]
        rows.append(
            {
                "frame_id": frame_id,
                "item_id": video_id,
                "clip_id": clip_id,
                "kind": kind,
                "frame_index": idx,
                "timestamp_s": round(s.timestamp_s, 4),
                "path": os.path.relpath(path, data_dir),
                "width": int(w),
                "height": int(h),
                "blur_var": round(blur(t), 3),
                "caption": None,
                "sha256": sha256_bytes(data),
                "transform": None,
            }
        )

    for cid, ts in per_clip:
        for i, t in enumerate(ts):
            if t in got:
                emit(f"{cid}_f{i:03d}", t, "clip_frame", cid, i)
    blurry: list[tuple[str, float, float]] = []
    if settings.pool:
        cands = [(t, blur(t)) for t in ptimes if t in got]
        kept, bl = select_pool(cands, settings.pool_min_gap_s, settings.pool_max_per_video, settings.blur_threshold)
        for i, t in enumerate(kept):
            emit(f"{video_id}_t{round(t * 1000):08d}", t, "pool_frame", None, i)
        blurry = [(f"{video_id}_t{round(t * 1000):08d}", t, v) for t, v in bl]
    return VideoFrames(rows, blurry)
