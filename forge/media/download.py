"""Fetching videos: yt-dlp's Python API for URLs, a copy for local files; both probed.

For a URL the metadata is extracted first and the source's licence and duration policy
applied to it, so a video that would be rejected is never downloaded. The format is
capped (≤ 720p by default), subtitles (or automatic captions) are fetched when the site
has them, and every failure — private, removed, geo-blocked, timed out, 404, corrupt
file — comes back as a :class:`Rejected` with a short reason code, never an exception.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import av

from forge.media.sources import (
    SourceItem,
    SourceSpec,
    classify_error,
    duration_allowed,
    license_allowed,
    ytdlp_base_options,
)
from forge.storage import safe_name
from forge.versioning import sha256_file

SUBTITLE_EXTS = (".vtt", ".srt")


@dataclass
class Rejected:
    item_id: str
    reason: str
    error_class: str = ""
    detail: str = ""


@dataclass
class DownloadSettings:
    max_height: int = 720
    socket_timeout_s: float = 20.0
    retries: int = 3
    ffmpeg_location: str | None = None  # imageio-ffmpeg's binary when None
    rate_limit_bytes: int | None = None


@dataclass
class VideoRecord:
    video_id: str
    batch: str
    source: str
    origin: str
    path: str  # relative to the data dir
    sha256: str
    bytes: int
    duration_s: float
    width: int
    height: int
    fps: float | None
    has_audio: bool
    video_codec: str | None
    url: str | None = None
    source_path: str | None = None
    extractor: str | None = None
    uploader: str | None = None
    channel: str | None = None
    upload_date: str | None = None
    license: str | None = None
    title: str | None = None
    subtitle_path: str | None = None
    subtitle_lang: str | None = None
    subtitle_kind: str | None = None  # subtitles | automatic_captions | sidecar
    fetched_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


@dataclass(frozen=True)
class Probe:
    duration_s: float
    width: int
    height: int
    fps: float | None
    has_audio: bool
    codec: str | None


class ProbeError(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


def probe_video(path: str | Path) -> Probe:
    """Open, check a video stream exists, decode the first frame and one near the end.

    Raises :class:`ProbeError` with reason ``empty_file``, ``decode_error`` (not a
    video, truncated, corrupt) or ``no_video_stream``."""
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        raise ProbeError("empty_file", f"{path.name} is empty")
    try:
        with av.open(str(path)) as c:
            if not c.streams.video:
                raise ProbeError("no_video_stream", f"{path.name} has no video stream")
            vs = c.streams.video[0]
            duration = None
            if vs.duration is not None and vs.time_base is not None:
                duration = float(vs.duration * vs.time_base)
            if not duration and c.duration:
                duration = c.duration / av.time_base
            first = next(c.decode(vs), None)
            if first is None:
                raise ProbeError("decode_error", f"{path.name}: no decodable frame")
            if duration and duration > 1.0:  # a truncated tail shows up when seeking near the end
                c.seek(int(duration * 0.9 / vs.time_base), stream=vs, backward=True)
                if next(c.decode(vs), None) is None:
                    raise ProbeError("decode_error", f"{path.name}: nothing decodable near the end")
            rate = vs.average_rate or vs.guessed_rate
            return Probe(
                duration_s=float(duration or 0.0),
                width=int(vs.codec_context.width or first.width),
                height=int(vs.codec_context.height or first.height),
                fps=float(rate) if rate else None,
                has_audio=bool(c.streams.audio),
                codec=vs.codec_context.name,
            )
    except ProbeError:
        raise
    except (av.FFmpegError, StopIteration, ValueError, OSError) as exc:
        raise ProbeError("decode_error", f"{path.name}: {type(exc).__name__}: {exc}") from exc


def ffmpeg_exe(location: str | None = None) -> str:
    if location:
        return location
    import imageio_ffmpeg

    return imageio_ffmpeg.get_ffmpeg_exe()


def videos_dir(media_dir: Path) -> Path:
    d = media_dir / "videos"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _rel(path: Path, data_dir: Path) -> str:
    return os.path.relpath(path, data_dir)


def ytdlp_download_options(out_dir: Path, video_id: str, spec: SourceSpec, s: DownloadSettings) -> dict[str, Any]:
    h = s.max_height
    opts = ytdlp_base_options(s.socket_timeout_s, s.retries)
    opts.update(
        {
            "outtmpl": {"default": str(out_dir / f"{safe_name(video_id)}.%(ext)s")},
            # Capped resolution; `?` keeps formats whose height is unknown (direct files).
            "format": f"bv*[height<=?{h}]+ba/b[height<=?{h}]/wv*+ba/w",
            "merge_output_format": "mp4",
            "ffmpeg_location": ffmpeg_exe(s.ffmpeg_location),
            "noplaylist": True,
            "writesubtitles": True,
            "writeautomaticsub": True,
            "subtitleslangs": list(spec.subtitle_langs),
            "subtitlesformat": "vtt/srt/best",
            "overwrites": True,
            "continuedl": False,
        }
    )
    if s.rate_limit_bytes:
        opts["ratelimit"] = s.rate_limit_bytes
    return opts


def _clear(out_dir: Path, video_id: str) -> None:
    for p in out_dir.glob(f"{safe_name(video_id)}.*"):
        p.unlink(missing_ok=True)


def fetch_url(item: SourceItem, spec: SourceSpec, data_dir: Path, media_dir: Path,
              settings: DownloadSettings) -> VideoRecord | Rejected:
    import yt_dlp

    out_dir = videos_dir(media_dir)
    url = item.url or ""
    opts = ytdlp_download_options(out_dir, item.item_id, spec, settings)
    try:
        with yt_dlp.YoutubeDL(opts) as ydl:
            info = ydl.extract_info(url, download=False)
            if not info:
                return Rejected(item.item_id, "no_metadata", "", "yt-dlp returned no metadata")
            if info.get("_type") == "playlist" or info.get("entries") is not None:
                return Rejected(item.item_id, "playlist_url", "", "item URL resolves to a playlist")
            if info.get("is_live"):
                return Rejected(item.item_id, "live_stream", "", "live streams are not ingested")
            if info.get("availability") in ("private", "premium_only", "subscriber_only", "needs_auth"):
                return Rejected(item.item_id, "private", "", f"availability={info.get('availability')}")
            # Policies on metadata, before a single media byte is fetched.
            ok, why = license_allowed(spec.license_policy, info.get("license"))
            if not ok:
                return Rejected(item.item_id, "license", "", why)
            ok, why = duration_allowed(spec.max_duration_s, info.get("duration"))
            if not ok:
                return Rejected(item.item_id, "too_long", "", why)
            _clear(out_dir, item.item_id)
            info = ydl.process_ie_result(info, download=True)
    except Exception as exc:  # noqa: BLE001 - every yt-dlp/network failure is a reject row
        reason, detail = classify_error(exc)
        return Rejected(item.item_id, reason, type(exc).__name__, detail)

    downloads = info.get("requested_downloads") or []
    filepath = Path(downloads[0].get("filepath") or "") if downloads else None
    if not filepath or not filepath.is_file():
        return Rejected(item.item_id, "download_failed", "", "yt-dlp reported no file")
    try:
        probe = probe_video(filepath)
    except ProbeError as exc:
        _clear(out_dir, item.item_id)
        return Rejected(item.item_id, exc.reason, "ProbeError", str(exc))
    # Direct files carry no duration in metadata: the policy applies after the probe.
    ok, why = duration_allowed(spec.max_duration_s, probe.duration_s)
    if not ok:
        _clear(out_dir, item.item_id)
        return Rejected(item.item_id, "too_long", "", why)

    sub_path = sub_lang = sub_kind = None
    for lang, sub in (info.get("requested_subtitles") or {}).items():
        fp = sub.get("filepath")
        if fp and Path(fp).is_file():
            sub_path, sub_lang = _rel(Path(fp), data_dir), lang
            auto = lang in (info.get("automatic_captions") or {}) and lang not in (info.get("subtitles") or {})
            sub_kind = "automatic_captions" if auto else "subtitles"
            break
    return VideoRecord(
        video_id=item.item_id, batch=item.batch, source=item.source, origin=item.origin,
        path=_rel(filepath, data_dir), sha256=sha256_file(filepath), bytes=filepath.stat().st_size,
        duration_s=probe.duration_s, width=probe.width, height=probe.height, fps=probe.fps,
        has_audio=probe.has_audio, video_codec=probe.codec, url=info.get("webpage_url") or url,
        extractor=info.get("extractor_key") or info.get("extractor"), uploader=info.get("uploader"),
        channel=info.get("channel"), upload_date=info.get("upload_date"), license=info.get("license"),
        title=info.get("title"), subtitle_path=sub_path, subtitle_lang=sub_lang, subtitle_kind=sub_kind,
    )


def find_sidecar_subtitle(video: Path) -> tuple[Path, str] | None:
    """``clip.vtt``, ``clip.en.vtt`` or ``.srt`` next to a local video."""
    for p in sorted(video.parent.glob(f"{video.stem}.*")):
        if p.suffix.lower() in SUBTITLE_EXTS:
            middle = p.name[len(video.stem) + 1 : -len(p.suffix)]
            return p, (middle or "und")
    return None


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.unlink(missing_ok=True)
    try:
        os.link(src, dst)  # no second copy of a large local library
    except OSError:
        shutil.copyfile(src, dst)


def ingest_local(item: SourceItem, spec: SourceSpec, data_dir: Path, media_dir: Path) -> VideoRecord | Rejected:
    src = Path(item.path or "")
    if not src.is_file():
        return Rejected(item.item_id, "missing_file", "FileNotFoundError", f"{src} not found")
    ok, why = license_allowed(spec.license_policy, spec.license)
    if not ok:
        return Rejected(item.item_id, "license", "", why)
    try:
        probe = probe_video(src)
    except ProbeError as exc:
        return Rejected(item.item_id, exc.reason, "ProbeError", str(exc))
    ok, why = duration_allowed(spec.max_duration_s, probe.duration_s)
    if not ok:
        return Rejected(item.item_id, "too_long", "", why)
    out_dir = videos_dir(media_dir)
    _clear(out_dir, item.item_id)
    dst = out_dir / f"{safe_name(item.item_id)}{src.suffix.lower()}"
    _link_or_copy(src, dst)
    sub_path = sub_lang = sub_kind = None
    side = find_sidecar_subtitle(src)
    if side:
        sdst = out_dir / f"{safe_name(item.item_id)}.{safe_name(side[1])}{side[0].suffix.lower()}"
        shutil.copyfile(side[0], sdst)
        sub_path, sub_lang, sub_kind = _rel(sdst, data_dir), side[1], "sidecar"
    return VideoRecord(
        video_id=item.item_id, batch=item.batch, source=item.source, origin=item.origin,
        path=_rel(dst, data_dir), sha256=sha256_file(dst), bytes=dst.stat().st_size,
        duration_s=probe.duration_s, width=probe.width, height=probe.height, fps=probe.fps,
        has_audio=probe.has_audio, video_codec=probe.codec, source_path=str(src),
        license=spec.license, title=item.title or src.stem, subtitle_path=sub_path,
        subtitle_lang=sub_lang, subtitle_kind=sub_kind,
    )


def fetch_video(item: SourceItem, spec: SourceSpec, data_dir: Path, media_dir: Path,
                settings: DownloadSettings) -> VideoRecord | Rejected:
    if item.url:
        return fetch_url(item, spec, data_dir, media_dir, settings)
    return ingest_local(item, spec, data_dir, media_dir)
