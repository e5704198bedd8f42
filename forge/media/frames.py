"""Frame sampling by seeking in one open container, sharpness, and the single-frame pool.

``sample_at`` opens the video once and, for each requested time (in order), seeks to
the keyframe before it only when the target is behind the decoder or more than
``seek_threshold_s`` ahead of it, then decodes forward to the first frame at or after the
target. 32 frames of a 30 s clip cost a few keyframe seeks instead of decoding ~900
frames, and no process is started per frame (see perf/frame_sampling.py).

Sharpness is the variance of the Laplacian of the grey image, measured after scaling the
longer side to 512 px so one threshold fits every resolution.
"""

from __future__ import annotations

import heapq
import math
import os
import shutil
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import av
import cv2
import numpy as np

from forge.media.clips import ClipPlan
from forge.media.policy import VIDEO_DEMUXERS
from forge.provenance.versioning import sha256_bytes

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


def blur_variance(rgb: np.ndarray, bgr: bool = False) -> float:
    grey = cv2.cvtColor(rgb, cv2.COLOR_BGR2GRAY if bgr else cv2.COLOR_RGB2GRAY)
    h, w = grey.shape
    scale = BLUR_REFERENCE_SIDE / max(h, w)
    if scale < 1.0:
        grey = cv2.resize(grey, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)
    return float(cv2.Laplacian(grey, cv2.CV_64F).var())


def frame_workers() -> int:
    """Threads that convert, measure and encode frames while the decoder runs on: the CPUs this
    process was given (``OMP_NUM_THREADS``, else every core); 1 = all in the decoding thread."""
    return decode_threads() or os.cpu_count() or 1


def decode_threads() -> int:
    """Decoder threads: the CPUs this process was given, as ``OMP_NUM_THREADS`` says (a Ray worker
    sets it to the task's ``num_cpus``, so a 1-CPU task does not decode on every core of its
    node); 0, the codec's own choice (all cores), when it is unset or unreadable."""
    try:
        return max(0, int(os.environ.get("OMP_NUM_THREADS", "0")))
    except ValueError:
        return 0


def frames_at(
    path: str | Path, times: list[float], seek_threshold_s: float = 1.0
) -> Iterator[tuple[float, float, av.VideoFrame]]:
    """Decoded frames at ``times`` (seconds from the start of the video stream), in time order,
    as ``(requested_s, timestamp_s, frame)``; a time past the last decodable frame yields nothing.
    Frames come out as the decoder reaches them, so a caller can convert and encode one while the
    next is being decoded."""
    if not times:
        return
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
            yield t, max(0.0, cur_t), cur


def sample_at(path: str | Path, times: list[float], seek_threshold_s: float = 1.0) -> list[Sampled]:
    """Frames at ``times`` as RGB arrays (see :func:`frames_at`)."""
    return [Sampled(t, ts, f.to_ndarray(format="rgb24")) for t, ts, f in frames_at(path, times, seek_threshold_s)]


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


def pool_keep_bound(min_gap_s: float, max_n: int, interval_s: float) -> int:
    """How many of the sharpest candidates :func:`select_pool` can ever reach, on a grid of
    candidates ``interval_s`` apart: each candidate it passes over lies within ``min_gap_s`` of one
    of the (fewer than ``max_n``) frames already kept, and at most ``2 * ceil(gap / interval) + 1``
    grid times do. Only these need to stay decoded until the pool is chosen."""
    per_kept = 2 * math.ceil(max(0.0, min_gap_s) / interval_s) + 1
    return max(0, max_n) * per_kept


def encode_jpeg(rgb: np.ndarray, quality: int, bgr: bool = False) -> bytes:
    """JPEG bytes of an RGB array (``bgr=True``: of a BGR one, OpenCV's own order, no copy)."""
    ok, buf = cv2.imencode(
        ".jpg", rgb if bgr else cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality]
    )
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


@dataclass
class _Done:
    """One decoded time after its per-frame work: what the rows need, the JPEG when a clip frame
    asked for it, and the BGR array while the time is still a pool candidate."""

    timestamp_s: float
    width: int
    height: int
    blur_var: float
    jpeg: bytes | None
    bgr: np.ndarray | None


def frames_for_video(
    video_path: Path,
    video_id: str,
    duration_s: float,
    clips: list[ClipPlan] | list[dict],
    out_dir: Path,
    data_dir: Path,
    settings: FrameSettings,
    workers: int | None = None,
) -> VideoFrames:
    """K uniform frames per clip plus the pool, from one pass over one open container.

    Each decoded frame's colour conversion, blur, JPEG encoding and write run on ``workers``
    threads (default :func:`frame_workers`) while the decoder goes on (PyAV and OpenCV release the
    GIL there); the output does not depend on ``workers``. A clip frame is kept as its JPEG
    bytes, not as an array; only pool candidates stay decoded until the pool is chosen."""
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
    clip_times = set(wanted)
    ptimes = [round(t, 4) for t in pool_times(duration_s, settings.pool_interval_s)] if settings.pool else []
    pool_set = set(ptimes)
    wanted.update(dict.fromkeys(ptimes))
    out_dir.mkdir(parents=True, exist_ok=True)
    quality = settings.jpeg_quality

    def work(times: list[float], ts: float, frame: av.VideoFrame) -> _Done:
        bgr = frame.to_ndarray(format="bgr24")
        h, w = bgr.shape[:2]
        jpeg = encode_jpeg(bgr, quality, bgr=True) if any(t in clip_times for t in times) else None
        keep = any(t in pool_set for t in times)
        return _Done(ts, int(w), int(h), blur_variance(bgr, bgr=True), jpeg, bgr if keep else None)

    def by_frame() -> Iterator[tuple[list[float], float, av.VideoFrame]]:
        """Requested times that land on one decoded frame, together: a frame is converted once
        (and never by two threads at once: PyAV keeps one scaler per frame)."""
        group: tuple[list[float], float, av.VideoFrame] | None = None
        for t, ts, f in frames_at(video_path, sorted(wanted), settings.seek_threshold_s):
            if group is not None and f is group[2]:
                group[0].append(t)
                continue
            if group is not None:
                yield group
            group = ([t], ts, f)
        if group is not None:
            yield group

    n = workers if workers is not None else frame_workers()
    done: dict[float, _Done] = {}
    # Pool candidates stay decoded only while they are among the sharpest few that the selection
    # can reach (pool_keep_bound): memory stays flat on a long video (600 candidates -> <= 56 here).
    bound = pool_keep_bound(settings.pool_min_gap_s, settings.pool_max_per_video, settings.pool_interval_s)
    held: list[tuple[float, float, int]] = []  # min-heap of (blur, -time, id): the least sharp on top
    holders: dict[int, int] = {}  # id(_Done) -> entries in ``held`` (one frame may serve two times)

    def collect(times: list[float], d: _Done) -> None:
        done.update(dict.fromkeys(times, d))
        if d.bgr is None:
            return
        for t in times:
            if t in pool_set and d.blur_var >= settings.blur_threshold:
                heapq.heappush(held, (d.blur_var, -t, id(d)))
                holders[id(d)] = holders.get(id(d), 0) + 1
        while len(held) > bound:
            _, neg_t, key = heapq.heappop(held)
            holders[key] -= 1
            if not holders[key]:
                done[-neg_t].bgr = None
        if not holders.get(id(d)):
            d.bgr = None  # blurry, or not sharp enough to be reached

    with ThreadPoolExecutor(max_workers=n) if n > 1 else nullcontext() as pool:
        if pool is None:
            for times, ts, f in by_frame():
                collect(times, work(times, ts, f))
        else:
            # a bounded window of frames in flight: the decoder stays ahead without holding the video
            window: deque[tuple[list[float], Future[_Done]]] = deque()
            for times, ts, f in by_frame():
                window.append((times, pool.submit(work, times, ts, f)))
                if len(window) > 2 * n:
                    tt, fut = window.popleft()
                    collect(tt, fut.result())
            for tt, fut in window:
                collect(tt, fut.result())

        blurry: list[tuple[str, float, float]] = []
        kept: list[float] = []
        if settings.pool:
            cands = [(t, done[t].blur_var) for t in ptimes if t in done]
            kept, bl = select_pool(cands, settings.pool_min_gap_s, settings.pool_max_per_video, settings.blur_threshold)
            blurry = [(f"{video_id}_t{round(t * 1000):08d}", t, v) for t, v in bl]
        # a kept pool frame that no clip asked for is encoded now; every other candidate is let go
        need = [t for t in kept if done[t].jpeg is None]
        encoded = (pool.map if pool is not None else map)(lambda t: encode_jpeg(done[t].bgr, quality, bgr=True), need)
        for t, data in zip(need, encoded):
            done[t].jpeg = data
        for d in done.values():
            d.bgr = None

        emits: list[tuple[str, float, str, str | None, int]] = [
            (f"{cid}_f{i:03d}", t, "clip_frame", cid, i) for cid, ts in per_clip for i, t in enumerate(ts) if t in done
        ]
        emits += [(f"{video_id}_t{round(t * 1000):08d}", t, "pool_frame", None, i) for i, t in enumerate(kept)]

        def write(e: tuple[str, float, str, str | None, int]) -> dict:
            frame_id, t, kind, clip_id, idx = e
            d = done[t]
            path = out_dir / f"{frame_id}.jpg"
            write_bytes_atomic(path, d.jpeg)
            return {
                "frame_id": frame_id,
                "item_id": video_id,
                "clip_id": clip_id,
                "kind": kind,
                "frame_index": idx,
                "timestamp_s": round(d.timestamp_s, 4),
                "path": os.path.relpath(path, data_dir),
                "width": d.width,
                "height": d.height,
                "blur_var": round(d.blur_var, 3),
                "caption": None,
                "sha256": sha256_bytes(d.jpeg),
                "transform": None,
            }

        rows = list((pool.map if pool is not None else map)(write, emits))
    return VideoFrames(rows, blurry)
