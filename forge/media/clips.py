"""Clips: fixed-length segments and the "most engaging segment" (MAIA §A.1).

Signals (measured once per video at ``step_s`` resolution, by two ffmpeg processes
that decode to tiny frames / 8 kHz mono — cheap next to a full decode):

* **motion**  mean absolute difference of consecutive 64×48 grey frames, in [0, 1];
* **scene cuts**  a step whose 8-bin-per-channel colour histogram differs from the
  previous one by more than ``cut_threshold`` (half the L1 distance, in [0, 1]);
* **audio energy**  RMS of the step's samples in dBFS, floored at −60 dB.

A candidate window ``[s, s + L)`` (every ``window_step_s`` seconds) gets

    motion_w = mean(motion)   scene_w = cuts per minute   audio_w = mean(dBFS)
    score    = 0.40 · n(motion_w) + 0.35 · n(scene_w) + 0.25 · n(audio_w)

where ``n`` is min-max normalisation over the video's candidate windows (so a score
ranks windows of one video; 0 when a signal is constant). Without an audio track the
audio weight is dropped and the other two are rescaled to sum to 1. The window with the
highest score (earliest on ties) is the engaging clip. Fixed segments get the same
score so they can be compared with it.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from forge.media.policy import VIDEO_DEMUXERS

# Input options for every ffmpeg run on a (possibly hostile) file: real containers only, and
# only local files (a playlist inside a "video" could otherwise name other files or URLs).
INPUT_GUARD = ("-format_whitelist", VIDEO_DEMUXERS, "-protocol_whitelist", "file,pipe")

WEIGHTS = {"motion": 0.40, "scene": 0.35, "audio": 0.25}
ANALYSIS_SIZE = (64, 48)
AUDIO_RATE = 8000
SILENCE_DB = -60.0


@dataclass(frozen=True)
class ClipSettings:
    segment_s: float = 30.0
    min_tail_s: float = 5.0  # a final segment shorter than this is dropped (unless it is the whole video)
    engaging: bool = True
    window_step_s: float = 1.0
    step_s: float = 0.5  # signal resolution
    cut_threshold: float = 0.35
    clip_files: str = "reencode"  # reencode (frame-accurate) | copy (keyframe-aligned, fast) | none
    crf: int = 23
    timeout_s: float = 300.0


@dataclass
class Signals:
    step_s: float
    motion: np.ndarray  # per step (first = 0)
    cuts: np.ndarray  # bool per step
    audio_db: np.ndarray | None  # per step, None without audio

    @property
    def n(self) -> int:
        return int(self.motion.size)


@dataclass
class WindowScore:
    start_s: float
    end_s: float
    motion: float
    scene_cuts: int
    scene_rate_per_min: float
    audio_rms_db: float | None
    score: float = 0.0


@dataclass
class ClipPlan:
    clip_id: str
    video_id: str
    kind: str  # segment | engaging
    clip_index: int
    start_s: float
    end_s: float
    is_engaging: bool
    window: WindowScore
    path: str | None = None
    transcript: str | None = None
    transcript_status: str = "none: no subtitle track"
    extra: dict = field(default_factory=dict)


# -- signals -------------------------------------------------------------------------


def _run(cmd: list[str], timeout: float) -> bytes:
    res = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)  # argument list, no shell
    if res.returncode != 0:
        raise RuntimeError(f"ffmpeg failed ({res.returncode}): {res.stderr.decode(errors='replace')[-500:]}")
    return res.stdout


def measure_signals(
    path: str | Path,
    has_audio: bool,
    ffmpeg: str,
    step_s: float = 0.5,
    cut_threshold: float = 0.35,
    timeout_s: float = 300.0,
) -> Signals:
    w, h = ANALYSIS_SIZE
    raw = _run(
        [
            ffmpeg,
            "-v",
            "error",
            "-nostdin",
            *INPUT_GUARD,
            "-i",
            str(path),
            "-an",
            "-sn",
            "-vf",
            f"fps=1/{step_s},scale={w}:{h}:flags=area",
            "-pix_fmt",
            "rgb24",
            "-f",
            "rawvideo",
            "-",
        ],
        timeout_s,
    )
    frames = np.frombuffer(raw, np.uint8)
    n = frames.size // (w * h * 3)
    frames = frames[: n * w * h * 3].reshape(n, h, w, 3).astype(np.float32)
    if n == 0:
        raise RuntimeError("no frames decoded for analysis")
    grey = frames.mean(axis=3)
    motion = np.zeros(n)
    motion[1:] = np.abs(np.diff(grey, axis=0)).mean(axis=(1, 2)) / 255.0
    bins = (frames // 32).astype(np.int64)  # 8 levels per channel
    codes = bins[..., 0] * 64 + bins[..., 1] * 8 + bins[..., 2]
    hists = np.stack([np.bincount(c.ravel(), minlength=512) for c in codes]).astype(np.float64)
    hists /= hists.sum(axis=1, keepdims=True)
    cuts = np.zeros(n, bool)
    cuts[1:] = 0.5 * np.abs(np.diff(hists, axis=0)).sum(axis=1) > cut_threshold

    audio_db = None
    if has_audio:
        pcm = np.frombuffer(
            _run(
                [
                    ffmpeg,
                    "-v",
                    "error",
                    "-nostdin",
                    *INPUT_GUARD,
                    "-i",
                    str(path),
                    "-vn",
                    "-sn",
                    "-ac",
                    "1",
                    "-ar",
                    str(AUDIO_RATE),
                    "-f",
                    "s16le",
                    "-",
                ],
                timeout_s,
            ),
            np.int16,
        )
        per = int(AUDIO_RATE * step_s)
        audio_db = np.full(n, SILENCE_DB)
        x = pcm.astype(np.float64) / 32768.0
        for i in range(n):
            seg = x[i * per : (i + 1) * per]
            if seg.size:
                rms = float(np.sqrt(np.mean(seg**2)))
                audio_db[i] = max(SILENCE_DB, 20 * np.log10(rms + 1e-12))
    return Signals(step_s=step_s, motion=motion, cuts=cuts, audio_db=audio_db)


def window_stats(sig: Signals, start_s: float, end_s: float) -> WindowScore:
    a = int(round(start_s / sig.step_s))
    b = max(a + 1, int(round(end_s / sig.step_s)))
    a, b = min(a, sig.n - 1), min(b, sig.n)
    # A cut at the window's first step belongs to the previous window.
    cuts = int(sig.cuts[a + 1 : b].sum())
    minutes = max(end_s - start_s, 1e-6) / 60.0
    return WindowScore(
        start_s=start_s,
        end_s=end_s,
        motion=float(sig.motion[a + 1 : b].mean()) if b - a > 1 else 0.0,
        scene_cuts=cuts,
        scene_rate_per_min=cuts / minutes,
        audio_rms_db=float(sig.audio_db[a:b].mean()) if sig.audio_db is not None else None,
    )


def _norm(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    if hi - lo <= 1e-12:
        return np.zeros_like(values)
    return np.clip((values - lo) / (hi - lo), 0.0, 1.0)


def score_windows(windows: list[WindowScore], reference: list[WindowScore] | None = None) -> None:
    """Fill ``score`` in place, normalising each signal over ``reference`` (default: windows)."""
    ref = reference or windows
    has_audio = all(w.audio_rms_db is not None for w in ref)
    weights = dict(WEIGHTS)
    if not has_audio:
        weights.pop("audio")
    total = sum(weights.values())

    def col(ws: list[WindowScore], name: str) -> np.ndarray:
        if name == "motion":
            return np.array([w.motion for w in ws])
        if name == "scene":
            return np.array([w.scene_rate_per_min for w in ws])
        return np.array([w.audio_rms_db for w in ws], dtype=float)

    score = np.zeros(len(windows))
    for name, wt in weights.items():
        r = col(ref, name)
        score += (wt / total) * _norm(col(windows, name), float(r.min()), float(r.max()))
    for w, s in zip(windows, score, strict=True):
        w.score = round(float(s), 6)


def candidate_windows(sig: Signals, duration_s: float, length_s: float, step_s: float) -> list[WindowScore]:
    if duration_s <= length_s:
        return [window_stats(sig, 0.0, duration_s)]
    starts = np.arange(0.0, duration_s - length_s + 1e-9, step_s)
    return [window_stats(sig, float(s), float(s) + length_s) for s in starts]


def most_engaging(
    sig: Signals, duration_s: float, length_s: float, step_s: float = 1.0
) -> tuple[WindowScore, list[WindowScore]]:
    cands = candidate_windows(sig, duration_s, length_s, step_s)
    score_windows(cands)
    best = max(cands, key=lambda w: (w.score, -w.start_s))
    return best, cands


def segment_bounds(duration_s: float, segment_s: float, min_tail_s: float) -> list[tuple[float, float]]:
    if duration_s <= segment_s:
        return [(0.0, duration_s)]
    out, s = [], 0.0
    while s < duration_s - 1e-6:
        e = min(s + segment_s, duration_s)
        if e - s >= min_tail_s or not out:
            out.append((s, e))
        s = e
    return out


def plan_clips(video_id: str, duration_s: float, sig: Signals, settings: ClipSettings) -> list[ClipPlan]:
    """Fixed segments plus the engaging window; when the engaging window coincides with a
    segment (always for videos no longer than one segment) that segment is flagged
    ``is_engaging`` instead of adding a second, identical clip."""
    segs = [window_stats(sig, a, b) for a, b in segment_bounds(duration_s, settings.segment_s, settings.min_tail_s)]
    best, cands = most_engaging(sig, duration_s, settings.segment_s, settings.window_step_s)
    score_windows(segs, reference=cands + segs)
    score_windows(cands, reference=cands + segs)
    plans = [
        ClipPlan(f"{video_id}_seg{i:03d}", video_id, "segment", i, w.start_s, w.end_s, False, w)
        for i, w in enumerate(segs)
    ]
    if settings.engaging:
        same = [
            p
            for p in plans
            if abs(p.start_s - best.start_s) < settings.window_step_s / 2
            and abs(p.end_s - best.end_s) < settings.window_step_s / 2
        ]
        if same:
            same[0].is_engaging = True
        else:
            plans.append(
                ClipPlan(f"{video_id}_eng", video_id, "engaging", len(plans), best.start_s, best.end_s, True, best)
            )
    return plans


# -- cutting -------------------------------------------------------------------------


def cut_clip(
    ffmpeg: str,
    src: str | Path,
    dst: str | Path,
    start_s: float,
    end_s: float,
    has_audio: bool,
    mode: str = "reencode",
    crf: int = 23,
    timeout_s: float = 300.0,
) -> None:
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.stem + ".tmp" + dst.suffix)
    cmd = [
        ffmpeg,
        "-y",
        "-v",
        "error",
        "-nostdin",
        *INPUT_GUARD,
        "-ss",
        f"{start_s:.3f}",
        "-i",
        str(src),
        "-t",
        f"{end_s - start_s:.3f}",
        "-map",
        "0:v:0",
    ]
    if has_audio:
        cmd += ["-map", "0:a:0"]
    if mode == "copy":
        cmd += ["-c", "copy"]
    else:
        cmd += ["-c:v", "libx264", "-preset", "veryfast", "-crf", str(crf), "-pix_fmt", "yuv420p"]
        if has_audio:
            cmd += ["-c:a", "aac", "-b:a", "96k"]
    cmd += ["-sn", "-dn", "-movflags", "+faststart", str(tmp)]
    try:
        _run(cmd, timeout_s)
        tmp.replace(dst)
    finally:
        tmp.unlink(missing_ok=True)


# -- subtitles -----------------------------------------------------------------------

_TIME = re.compile(r"(?:(\d+):)?(\d{1,2}):(\d{2})[.,](\d{1,3})")
_TAG = re.compile(r"<[^>]+>|\{\\[^}]*\}")


@dataclass(frozen=True)
class Cue:
    start_s: float
    end_s: float
    text: str


def _ts(s: str) -> float:
    m = _TIME.search(s)
    if not m:
        raise ValueError(f"bad timestamp {s!r}")
    h, mi, se, ms = m.groups()
    return int(h or 0) * 3600 + int(mi) * 60 + int(se) + int(ms.ljust(3, "0")) / 1000


def parse_subtitles(path: str | Path) -> list[Cue]:
    """WebVTT or SRT cues (tags stripped, rolling duplicate lines of auto-captions merged)."""
    text = Path(path).read_text(encoding="utf-8-sig", errors="replace").replace("\r\n", "\n")
    cues: list[Cue] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [ln for ln in block.strip().split("\n") if ln.strip()]
        for i, ln in enumerate(lines):
            if "-->" in ln:
                a, b = ln.split("-->", 1)
                body = " ".join(_TAG.sub("", x).strip() for x in lines[i + 1 :]).strip()
                if body:
                    cues.append(Cue(_ts(a), _ts(b.strip().split(" ")[0]), body))
                break
    if not cues and "-->" in text:
        raise ValueError("no cue could be parsed")
    return cues


def transcript_for(cues: list[Cue], start_s: float, end_s: float) -> str | None:
    """Text of the cues overlapping ``[start_s, end_s)``, consecutive repeats dropped."""
    out: list[str] = []
    for c in cues:
        if c.end_s > start_s and c.start_s < end_s and (not out or out[-1] != c.text):
            out.append(c.text)
    return " ".join(out) if out else None


def attach_transcripts(plans: list[ClipPlan], subtitle_file: Path | None, kind: str | None) -> None:
    if subtitle_file is None:
        for p in plans:
            p.transcript, p.transcript_status = None, "none: no subtitle track"
        return
    try:
        cues = parse_subtitles(subtitle_file)
    except (OSError, ValueError) as exc:
        for p in plans:
            p.transcript, p.transcript_status = None, f"error: unreadable subtitles ({type(exc).__name__})"
        return
    status = "automatic_captions" if kind == "automatic_captions" else "subtitles"
    for p in plans:
        p.transcript = transcript_for(cues, p.start_s, p.end_s)
        p.transcript_status = status if p.transcript else "none: no cues in clip window"
