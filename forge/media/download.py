"""Fetching videos: yt-dlp's Python API for URLs, a copy for local files; both probed.

For a URL the metadata is extracted first and the source's licence and duration policy
applied to it, so a video that would be rejected is never downloaded. The format is
capped (≤ 720p by default), subtitles (or automatic captions) are fetched when the site
has them, and every failure — private, removed, geo-blocked, timed out, 404, corrupt
file — comes back as a :class:`Rejected` with a short reason code, never an exception.

Untrusted URLs and files are held to the settings' :class:`~forge.media.policy.IngestPolicy`:
http(s) to allowed addresses only (checked first, then on every connection yt-dlp makes:
``address_not_allowed``, ``unsupported_url``), a size cap (known sizes before the download,
then while it streams: ``too_large``), a duration cap whatever the source says
(``too_long``), pixel and frame limits on every probed video (``too_large``,
``too_many_frames``), and local files confined to the policy's roots. Files land under a
temporary name and are renamed into place.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import av

from forge.media.policy import (
    VIDEO_DEMUXERS,
    IngestPolicy,
    PolicyViolation,
    check_url,
    confine,
    network_guard,
    regular_file,
)
from forge.media.sources import (
    SourceItem,
    SourceSpec,
    classify_error,
    duration_allowed,
    license_allowed,
    ytdlp_base_options,
)
from forge.provenance.versioning import sha256_file
from forge.storage import safe_name

SUBTITLE_EXTS = (".vtt", ".srt")
_HTTP = "[protocol~='^(https?|m3u8(_native)?|http_dash_segments)$']"


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
    policy: IngestPolicy = field(default_factory=IngestPolicy)


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
    fetched_at: datetime = field(default_factory=lambda: datetime.now(UTC))


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


def check_limits(probe: Probe, policy: IngestPolicy, name: str) -> None:
    """Pixel, frame and duration limits of a probed video (before any frame is sampled)."""
    if probe.width * probe.height > policy.max_video_pixels:
        raise ProbeError("too_large", f"{name}: {probe.width}x{probe.height} exceeds {policy.max_video_pixels} pixels")
    if probe.duration_s > policy.max_duration_s:
        raise ProbeError("too_long", f"{name}: duration {probe.duration_s:.1f}s > cap {policy.max_duration_s:.0f}s")
    frames = probe.duration_s * (probe.fps or 0.0)
    if frames > policy.max_video_frames:
        raise ProbeError("too_many_frames", f"{name}: ~{frames:.0f} frames > {policy.max_video_frames}")


def probe_video(path: str | Path, policy: IngestPolicy | None = None) -> Probe:
    """Open, check a video stream exists, decode the first frame and one near the end.

    Raises :class:`ProbeError` with reason ``empty_file``, ``decode_error`` (not a
    video, truncated, corrupt), ``no_video_stream``, or, with a policy, ``too_large`` /
    ``too_long`` / ``too_many_frames`` (checked from the headers before decoding)."""
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        raise ProbeError("empty_file", f"{path.name} is empty")
    try:
        with av.open(str(path), options={"format_whitelist": VIDEO_DEMUXERS}) as c:
            if not c.streams.video:
                raise ProbeError("no_video_stream", f"{path.name} has no video stream")
            vs = c.streams.video[0]
            duration = None
            if vs.duration is not None and vs.time_base is not None:
                duration = float(vs.duration * vs.time_base)
            if not duration and c.duration:
                duration = c.duration / av.time_base
            if policy is not None:  # declared sizes, before a frame is decoded
                rate0 = vs.average_rate or vs.guessed_rate
                check_limits(
                    Probe(
                        float(duration or 0.0),
                        int(vs.codec_context.width or 0),
                        int(vs.codec_context.height or 0),
                        float(rate0) if rate0 else None,
                        False,
                        None,
                    ),
                    policy,
                    path.name,
                )
            first = next(c.decode(vs), None)
            if first is None:
                raise ProbeError("decode_error", f"{path.name}: no decodable frame")
            if duration and duration > 1.0:  # a truncated tail shows up when seeking near the end
                c.seek(int(duration * 0.9 / vs.time_base), stream=vs, backward=True)
                if next(c.decode(vs), None) is None:
                    raise ProbeError("decode_error", f"{path.name}: nothing decodable near the end")
            rate = vs.average_rate or vs.guessed_rate
            probe = Probe(
                duration_s=float(duration or 0.0),
                width=int(vs.codec_context.width or first.width),
                height=int(vs.codec_context.height or first.height),
                fps=float(rate) if rate else None,
                has_audio=bool(c.streams.audio),
                codec=vs.codec_context.name,
            )
            if policy is not None:
                check_limits(probe, policy, path.name)
            return probe
    except ProbeError:
        raise
    except (av.FFmpegError, StopIteration, ValueError, OSError) as exc:
        # FFmpeg's message names the full path: the file name alone keeps the data dir out of rejects.
        raise ProbeError(
            "decode_error", f"{path.name}: {type(exc).__name__}: {str(exc).replace(str(path), path.name)}"
        ) from exc


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


class _Capture:
    """yt-dlp logger that keeps the messages (max-filesize aborts are only reported there)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def debug(self, msg: str) -> None:
        self.lines.append(str(msg)[:500])

    info = warning = error = debug


class _SizeCap:
    """Progress hook: abort a download once it streams past the cap (no Content-Length)."""

    def __init__(self, cap: int) -> None:
        self.cap, self.tripped = cap, False

    def __call__(self, d: dict[str, Any]) -> None:
        got = d.get("downloaded_bytes") or 0
        total = d.get("total_bytes") or d.get("total_bytes_estimate") or 0
        if got > self.cap or total > self.cap:
            self.tripped = True
            raise PolicyViolation("too_large", f"download exceeds {self.cap} bytes")


def _known_size(info: dict[str, Any]) -> int | None:
    sizes = [f.get("filesize") or f.get("filesize_approx") for f in (info.get("requested_formats") or [info])]
    known = [int(x) for x in sizes if x]
    return sum(known) if known else None


def ytdlp_download_options(out_dir: Path, video_id: str, spec: SourceSpec, s: DownloadSettings) -> dict[str, Any]:
    h = s.max_height
    opts = ytdlp_base_options(s.socket_timeout_s, s.retries)
    opts.update(
        {
            "outtmpl": {"default": str(out_dir / f"{safe_name(video_id)}.%(ext)s")},
            # Capped resolution; `?` keeps formats whose height is unknown (direct files).
            # Only protocols yt-dlp downloads itself over http(s); rtmp / ftp / ... formats are never picked.
            "format": f"bv*[height<=?{h}]{_HTTP}+ba{_HTTP}/b[height<=?{h}]{_HTTP}/wv*{_HTTP}+ba{_HTTP}/w{_HTTP}",
            "merge_output_format": "mp4",
            "ffmpeg_location": ffmpeg_exe(s.ffmpeg_location),
            "noplaylist": True,
            "writesubtitles": True,
            "writeautomaticsub": True,
            "subtitleslangs": list(spec.subtitle_langs),
            "subtitlesformat": "vtt/srt/best",
            "overwrites": True,
            "continuedl": False,
            "max_filesize": s.policy.max_download_bytes,  # refused up front when the server states the size
            "playlistend": s.policy.max_playlist_items,
            # HLS / DASH fragments through yt-dlp's own downloader (in this process, under the
            # network guard), never through an ffmpeg subprocess that would fetch by itself.
            "external_downloader": {"default": "native"},
        }
    )
    if s.rate_limit_bytes:
        opts["ratelimit"] = s.rate_limit_bytes
    return opts


def _publish(stage: Path, out_dir: Path, video_id: str) -> dict[Path, Path]:
    """Move the staged files into ``out_dir`` (rename: atomic per file), then drop the item's
    files from an earlier run that this run did not replace. Returns old → new paths."""
    moved = {}
    for f in sorted(stage.iterdir()):
        if f.is_file() and f.name.startswith(safe_name(video_id) + "."):
            dst = out_dir / f.name
            os.replace(f, dst)
            moved[f.absolute()] = dst
    for old in out_dir.glob(f"{safe_name(video_id)}.*"):
        if old not in moved.values():
            old.unlink(missing_ok=True)
    return moved


def fetch_url(
    item: SourceItem, spec: SourceSpec, data_dir: Path, media_dir: Path, settings: DownloadSettings
) -> VideoRecord | Rejected:
    """Download into a private staging folder beside the final one; only a file that passed
    every check is renamed into place, so the previous version stays until then."""
    out_dir = videos_dir(media_dir)
    policy = settings.policy
    try:
        check_url(item.url or "", policy)
    except PolicyViolation as exc:
        return Rejected(item.item_id, exc.reason, type(exc).__name__, exc.detail)
    stage = Path(tempfile.mkdtemp(prefix=f".{safe_name(item.item_id)}.", suffix=".tmp", dir=out_dir)).absolute()
    try:
        return _fetch_url_staged(item, spec, data_dir, out_dir, stage, settings)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _fetch_url_staged(
    item: SourceItem, spec: SourceSpec, data_dir: Path, out_dir: Path, stage: Path, settings: DownloadSettings
) -> VideoRecord | Rejected:
    import yt_dlp

    url = item.url or ""
    policy = settings.policy
    opts = ytdlp_download_options(stage, item.item_id, spec, settings)
    capture, cap = _Capture(), _SizeCap(policy.max_download_bytes)
    opts.update(logger=capture, progress_hooks=[cap])
    max_duration = min(x for x in (spec.max_duration_s, policy.max_duration_s) if x is not None)
    guard = None
    try:
        with network_guard(policy) as guard, yt_dlp.YoutubeDL(opts) as ydl:
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
            ok, why = duration_allowed(max_duration, info.get("duration"))
            if not ok:
                return Rejected(item.item_id, "too_long", "", why)
            size = _known_size(info)
            if size is not None and size > policy.max_download_bytes:
                return Rejected(item.item_id, "too_large", "", f"{size} bytes > cap {policy.max_download_bytes}")
            info = ydl.process_ie_result(info, download=True)
    except Exception as exc:  # noqa: BLE001 - every yt-dlp/network failure is a reject row
        if guard is not None and guard.refused:
            return Rejected(
                item.item_id,
                "address_not_allowed",
                type(exc).__name__,
                f"a request went to {guard.refused[0]}, a non-public address (a redirect?); refused",
            )
        if cap.tripped:
            return Rejected(item.item_id, "too_large", type(exc).__name__, f"download exceeded {cap.cap} bytes")
        reason, detail = classify_error(exc)
        return Rejected(item.item_id, reason, type(exc).__name__, detail)

    downloads = info.get("requested_downloads") or []
    filepath = Path(downloads[0].get("filepath") or "").absolute() if downloads else None
    if not filepath or not filepath.is_file():
        if any("max-filesize" in line for line in capture.lines):
            return Rejected(
                item.item_id, "too_large", "", f"server states a size above {policy.max_download_bytes} bytes"
            )
        return Rejected(item.item_id, "download_failed", "", "yt-dlp reported no file")
    try:
        probe = probe_video(filepath, policy)
    except ProbeError as exc:
        return Rejected(item.item_id, exc.reason, "ProbeError", str(exc))
    # Direct files carry no duration in metadata: the policy applies after the probe.
    ok, why = duration_allowed(max_duration, probe.duration_s)
    if not ok:
        return Rejected(item.item_id, "too_long", "", why)
    digest, nbytes = sha256_file(filepath), filepath.stat().st_size
    moved = _publish(stage, out_dir, item.item_id)
    final = moved[filepath]

    sub_path = sub_lang = sub_kind = None
    for lang, sub in (info.get("requested_subtitles") or {}).items():
        fp = moved.get(Path(sub.get("filepath") or "").absolute())
        if fp and fp.is_file():
            sub_path, sub_lang = _rel(fp, data_dir), lang
            auto = lang in (info.get("automatic_captions") or {}) and lang not in (info.get("subtitles") or {})
            sub_kind = "automatic_captions" if auto else "subtitles"
            break
    return VideoRecord(
        video_id=item.item_id,
        batch=item.batch,
        source=item.source,
        origin=item.origin,
        path=_rel(final, data_dir),
        sha256=digest,
        bytes=nbytes,
        duration_s=probe.duration_s,
        width=probe.width,
        height=probe.height,
        fps=probe.fps,
        has_audio=probe.has_audio,
        video_codec=probe.codec,
        url=info.get("webpage_url") or url,
        extractor=info.get("extractor_key") or info.get("extractor"),
        uploader=info.get("uploader"),
        channel=info.get("channel"),
        upload_date=info.get("upload_date"),
        license=info.get("license"),
        title=info.get("title"),
        subtitle_path=sub_path,
        subtitle_lang=sub_lang,
        subtitle_kind=sub_kind,
    )


def find_sidecar_subtitle(video: Path) -> tuple[Path, str] | None:
    """``clip.vtt``, ``clip.en.vtt`` or ``.srt`` next to a local video."""
    for p in sorted(video.parent.glob(f"{video.stem}.*")):
        if p.suffix.lower() in SUBTITLE_EXTS:
            middle = p.name[len(video.stem) + 1 : -len(p.suffix)]
            return p, (middle or "und")
    return None


def _link_or_copy(src: Path, dst: Path) -> None:
    """Place ``src`` at ``dst`` atomically: a hard link (no second copy of a large local
    library) or a copy, under a temporary name first, then renamed over ``dst``."""
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        try:
            os.link(src, tmp, follow_symlinks=False)
        except OSError:
            shutil.copyfile(src, tmp, follow_symlinks=False)
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)


def ingest_local(
    item: SourceItem, spec: SourceSpec, data_dir: Path, media_dir: Path, policy: IngestPolicy | None = None
) -> VideoRecord | Rejected:
    policy = policy or IngestPolicy()
    try:
        # Re-checked at fetch time: the file may have been swapped for a link since listing.
        src = confine(Path(item.path or ""), policy, "video file")
        size = regular_file(src, "video file").st_size
    except PolicyViolation as exc:
        return Rejected(item.item_id, exc.reason, type(exc).__name__, exc.detail)
    if size > policy.max_download_bytes:
        return Rejected(item.item_id, "too_large", "", f"{size} bytes > cap {policy.max_download_bytes}")
    ok, why = license_allowed(spec.license_policy, spec.license)
    if not ok:
        return Rejected(item.item_id, "license", "", why)
    try:
        probe = probe_video(src, policy)
    except ProbeError as exc:
        return Rejected(item.item_id, exc.reason, "ProbeError", str(exc))
    ok, why = duration_allowed(spec.max_duration_s, probe.duration_s)
    if not ok:
        return Rejected(item.item_id, "too_long", "", why)
    out_dir = videos_dir(media_dir)
    dst = out_dir / f"{safe_name(item.item_id)}{src.suffix.lower()}"
    for old in out_dir.glob(f"{safe_name(item.item_id)}.*"):
        if old != dst:  # a previous version with another extension / subtitle language
            old.unlink(missing_ok=True)
    _link_or_copy(src, dst)
    sub_path = sub_lang = sub_kind = None
    side = find_sidecar_subtitle(src)
    if side:
        try:
            sub_src = confine(side[0], policy, "subtitle file")
            if regular_file(sub_src, "subtitle file").st_size > policy.max_text_file_bytes:
                side = None  # a subtitle file this large is not a subtitle file
        except PolicyViolation:
            side = None
    if side:
        sdst = out_dir / f"{safe_name(item.item_id)}.{safe_name(side[1])}{side[0].suffix.lower()}"
        _link_or_copy(sub_src, sdst)
        sub_path, sub_lang, sub_kind = _rel(sdst, data_dir), side[1], "sidecar"
    return VideoRecord(
        video_id=item.item_id,
        batch=item.batch,
        source=item.source,
        origin=item.origin,
        path=_rel(dst, data_dir),
        sha256=sha256_file(dst),
        bytes=dst.stat().st_size,
        duration_s=probe.duration_s,
        width=probe.width,
        height=probe.height,
        fps=probe.fps,
        has_audio=probe.has_audio,
        video_codec=probe.codec,
        source_path=str(src),
        license=spec.license,
        title=item.title or src.stem,
        subtitle_path=sub_path,
        subtitle_lang=sub_lang,
        subtitle_kind=sub_kind,
    )


def fetch_video(
    item: SourceItem, spec: SourceSpec, data_dir: Path, media_dir: Path, settings: DownloadSettings
) -> VideoRecord | Rejected:
    if item.url:
        return fetch_url(item, spec, data_dir, media_dir, settings)
    return ingest_local(item, spec, data_dir, media_dir, settings.policy)
