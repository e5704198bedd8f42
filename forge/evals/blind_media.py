"""The blind baseline's media: the same picture or clip under other bytes (docs/review.md, "Two rooms").

A file copied as it is would match the review task's file byte for byte (same hash, same EXIF,
same size), which links a blind task to its review task and its gold. So each image is decoded
and encoded again without its metadata (EXIF, text chunks, ICC profile, comments): a JPEG stays a
JPEG (quality ``JPEG_QUALITY``), every other format becomes a PNG (lossless). A video is re-muxed
by ffmpeg without its metadata (streams copied, not re-encoded: the frames people see are the
model's). Either way the result must hash differently from the source, or it is refused
(``BlindMediaError``). The result is always a new regular file, never a link.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from PIL import Image

JPEG_QUALITY = (92, 90)  # the second when the first reproduces the source's bytes
PNG_LEVELS = (9, 1)
VIDEO_SUFFIXES = {".mp4", ".m4v", ".mov", ".webm", ".mkv", ".avi"}


class BlindMediaError(ValueError):
    """The file cannot be given bytes of its own (unreadable, or every encoding reproduced it)."""


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def suffix_for(src: Path) -> str:
    """The suffix the re-encoded file takes."""
    s = src.suffix.lower()
    if s in VIDEO_SUFFIXES:
        return s
    return ".jpg" if s in (".jpg", ".jpeg") else ".png"


def _image(src: Path, tmp: Path, attempt: int) -> None:
    try:
        with Image.open(src) as im:
            im.load()
            jpeg = im.format == "JPEG"
            pixels = im.copy()  # pixels only: info (EXIF, ICC, text) is not passed to save
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise BlindMediaError(f"{src.name}: not a readable image ({type(exc).__name__})") from exc
    if jpeg:
        if pixels.mode not in ("RGB", "L"):
            pixels = pixels.convert("RGB")
        pixels.save(tmp, "JPEG", quality=JPEG_QUALITY[attempt], optimize=True)
    else:
        pixels.save(tmp, "PNG", optimize=attempt == 0, compress_level=PNG_LEVELS[attempt])


def _video(src: Path, tmp: Path, attempt: int) -> None:
    import imageio_ffmpeg  # the ffmpeg the project installs (forge.media.download.ffmpeg_exe)

    cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-y", "-i", str(src), "-map", "0", "-c", "copy"]
    cmd += ["-map_metadata", "-1", "-map_chapters", "-1", "-fflags", "+bitexact"]
    if attempt:  # another muxer layout: the index at the front
        cmd += ["-movflags", "+faststart"] if tmp.suffix in (".mp4", ".m4v", ".mov") else ["-cluster_size_limit", "1M"]
    cmd += [str(tmp)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise BlindMediaError(f"{src.name}: ffmpeg could not re-mux it: {done.stderr.strip()[-300:]}")


# (source sha256, suffix) -> a copy this process made and its sha256: many items share one clip (a
# video's questions, a clip's statements), and re-encoding the same bytes again gives the same result,
# so the next item's copy is a byte copy of the first (an ffmpeg start per item cost a build minutes).
_MADE: dict[tuple[str, str], tuple[Path, str]] = {}


def _copy_made(source: str, dst: Path, tmp: Path) -> bool:
    """``dst`` as a byte copy of the copy made earlier from the same source, if it is still whole."""
    made = _MADE.get((source, dst.suffix))
    if made is None or not made[0].is_file() or made[0] == dst:
        return False
    shutil.copyfile(made[0], tmp)
    if sha256(tmp) != made[1]:  # changed or replaced since: encode afresh
        tmp.unlink(missing_ok=True)
        return False
    os.chmod(tmp, 0o600)
    tmp.replace(dst)
    return True


def reencode(src: Path, dst: Path) -> None:
    """Write ``dst`` (suffix from ``suffix_for``): ``src`` re-encoded, with other bytes than ``src``."""
    video = src.suffix.lower() in VIDEO_SUFFIXES
    source = sha256(src)
    tmp = dst.with_name(f".{dst.stem}.tmp{dst.suffix}")
    if _copy_made(source, dst, tmp):
        return
    for attempt in (0, 1):
        tmp.unlink(missing_ok=True)
        try:
            (_video if video else _image)(src, tmp, attempt)
            made = sha256(tmp)
            if made != source:
                os.chmod(tmp, 0o600)  # people's blind material: this user's only, from its first moment
                tmp.replace(dst)
                _MADE[(source, dst.suffix)] = (dst, made)
                return
        finally:
            tmp.unlink(missing_ok=True)
    raise BlindMediaError(f"{src.name}: every encoding reproduced the source's bytes")
