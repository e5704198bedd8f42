"""A clip's audio as a small upload for speech recognition: mono, 16 kHz, FLAC.

16 kHz mono is what Whisper-family models resample to anyway, so nothing audible to them is
lost; FLAC is lossless, accepted by the OpenAI transcription endpoint and by faster-whisper
(PyAV), and about half the size of the same PCM in WAV (a 30 s clip is ~0.5 MB, far under the
endpoint's 25 MB limit). Bit-exact flags drop the encoder's version tag, so the same audio
always gives the same bytes and the transcription cache (keyed by their hash) holds across
ffmpeg upgrades.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from forge.media.clips import INPUT_GUARD

SAMPLE_RATE = 16_000  # mono, 16-bit
AUDIO_FORMAT = "flac"
# ffmpeg's wording when the input has no audio stream to map
_NO_STREAM = ("matches no streams", "does not contain any stream", "Output file is empty")


@dataclass(frozen=True)
class ClipAudio:
    data: bytes
    duration_s: float
    filename: str = f"audio.{AUDIO_FORMAT}"


class NoAudioStream(ValueError):
    """The input has no audio stream: a fact about the clip, not an error."""


def extract_audio(
    ffmpeg: str,
    src: str | Path,
    start_s: float | None = None,
    end_s: float | None = None,
    timeout_s: float = 300.0,
) -> ClipAudio:
    """The audio of ``src`` (or of its ``[start_s, end_s)`` window) as mono 16 kHz FLAC bytes.

    Raises ``NoAudioStream`` when there is no audio track and ``RuntimeError`` when ffmpeg fails."""
    cmd = [ffmpeg, "-v", "error", "-nostdin", *INPUT_GUARD]
    if start_s is not None:
        cmd += ["-ss", f"{start_s:.3f}"]
    cmd += ["-i", str(src)]
    if start_s is not None and end_s is not None:
        cmd += ["-t", f"{max(end_s - start_s, 0.0):.3f}"]
    cmd += [
        "-map",
        "0:a:0",
        "-vn",
        "-sn",
        "-dn",
        "-map_metadata",
        "-1",
        "-fflags",
        "+bitexact",
        "-flags:a",
        "+bitexact",
        "-ac",
        "1",
        "-ar",
        str(SAMPLE_RATE),
        "-sample_fmt",
        "s16",  # 16-bit: decoders give float, which FLAC would store as 32-bit
        "-c:a",
        "flac",
        "-f",
        AUDIO_FORMAT,
        "pipe:1",
    ]
    res = subprocess.run(cmd, capture_output=True, timeout=timeout_s, check=False)  # argument list, no shell
    err = res.stderr.decode(errors="replace")
    if res.returncode != 0:
        if any(s in err for s in _NO_STREAM):
            raise NoAudioStream("no audio stream")
        raise RuntimeError(f"ffmpeg failed ({res.returncode}): {err[-500:]}")
    if not res.stdout:
        raise NoAudioStream("no audio stream")
    # (a piped FLAC has no sample count in its header: the window is the duration, 0 = unknown)
    duration = (end_s - start_s) if start_s is not None and end_s is not None else 0.0
    return ClipAudio(res.stdout, round(float(duration), 3))
