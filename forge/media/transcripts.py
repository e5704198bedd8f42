"""What is said in each clip (ViMU App. A, Stage 1: "an audio transcript t_i").

Per clip, in order: the clip's subtitles when the video has them (``clips.transcript``), else
its audio (mono 16 kHz FLAC, ``forge/media/audio.py``) sent to a speech recogniser — the
configured LLM endpoint's ``audio.transcriptions`` (``LLMEngine.transcribe``: cached, retried,
on the ledger) or a local faster-whisper model. Every row says where its text came from
(``transcript_source``: ``subtitles`` | ``openai:<model>`` | ``faster-whisper`` | ``stub`` |
``none``) and, when the text is empty, why (``transcript_status``). A clip without an audio
track is a fact (source ``none``), not an error; a failed extraction or transcription is
recorded in the rejects with its reason and the clip keeps a row that says so.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from forge.llm.stub import STUB_BACKEND
from forge.llm.types import AudioRequest
from forge.media.audio import NoAudioStream, extract_audio
from forge.media.clips import SILENCE_DB
from forge.models.protocols import Heard, Transcriber
from forge.provenance.versioning import sha256_bytes
from forge.scale.ray_pool import RayPlacement, actor_pool, map_shards
from forge.storage import RejectLog
from forge.storage.location import is_remote, location_of
from forge.storage.objects import localize

_log = logging.getLogger("subtext_forge.transcripts")

STAGE = "transcripts"
TRANSCRIPT_COLUMNS = [
    "clip_id",
    "batch",
    "source",
    "video_id",
    "transcript",
    "transcript_source",
    "transcript_status",
    "audio_sha256",
    "model",
    "request_key",
]
SUBTITLE_STATUSES = ("subtitles", "automatic_captions")
TRANSCRIBERS = ("llm", "faster-whisper", "off")


# 404/405/501 on the audio route: the endpoint has no audio.transcriptions, which says nothing
# about the clip. Such clips get no transcript (like recognition off), not a reject each.
_UNSUPPORTED = re.compile(r"^(404|405|501)\b")


class EngineTranscriber:
    """The configured LLM endpoint's ``audio.transcriptions`` (or the stub, which marks its text)."""

    def __init__(self, engine: Any):
        self.engine = engine
        stub = engine.backend.name == STUB_BACKEND
        self.label = STUB_BACKEND if stub else f"openai:{engine.transcription_model(STAGE)}"

    def hear(self, partition: str, audio: list[AudioRequest]) -> list[Heard]:
        out = []
        for r in self.engine.transcribe(STAGE, partition, audio):
            text = (r.data or {}).get("text", "") if r.ok else ""
            unsupported = not r.ok and bool(_UNSUPPORTED.match(str(r.error or "")))
            out.append(
                Heard(
                    r.ok,
                    str(text or ""),
                    "" if r.ok else f"{r.error_class}: {r.error}",
                    r.model,
                    r.request_key,
                    unsupported=unsupported,
                )
            )
        return out


class WhisperTranscriber:
    """A local faster-whisper (CTranslate2) model from a directory: no network, no cost.

    Replies are cached in the LLM cache (key: audio hash + model directory name + settings),
    so a re-run does not decode again. With a Ray ``placement`` the model is loaded in Ray actors
    (``WhisperWorker`` below, one per replica, declaring the placement's CPUs /
    GPUs) which run ``decode`` on shards of the uncached clips; the cache stays here."""

    label = "faster-whisper"

    def __init__(
        self,
        model_path: str | None,
        device: str = "auto",
        compute_type: str = "default",
        language: str | None = None,
        cache: Any = None,
        placement: Any = None,
    ):
        self.placement = placement
        self.remote = placement is not None and placement.enabled
        self.args = (model_path, device, compute_type, language)
        self.model = None if self.remote else load_whisper(model_path, device, compute_type)
        self.name = Path(str(model_path)).name
        self.settings = {"device": device, "compute_type": compute_type, "language": language}
        self.cache = cache

    def decode(self, audio: list[AudioRequest]) -> list[tuple[str | None, str]]:
        """``(text, "")`` or ``(None, error)`` per request, by the model in this process."""
        out: list[tuple[str | None, str]] = []
        for a in audio:
            try:
                segments, _info = self.model.transcribe(io.BytesIO(a.data), language=self.settings["language"])
                out.append((" ".join(s.text.strip() for s in segments).strip(), ""))
            except Exception as exc:  # noqa: BLE001 - one clip's failure is that clip's reject
                out.append((None, f"{type(exc).__name__}: {exc}"))
        return out

    def hear(self, partition: str, audio: list[AudioRequest]) -> list[Heard]:
        from forge.llm.cache import cache_key

        keys = [
            cache_key(
                {
                    "kind": "audio_transcription",
                    "backend": self.label,
                    "model": self.name,
                    "audio": sha256_bytes(a.data),
                    "settings": self.settings,
                }
            )
            for a in audio
        ]
        hits = [self.cache.get(k) if self.cache is not None else None for k in keys]
        todo = [a for a, h in zip(audio, hits) if h is None]
        if self.remote:
            decoded = iter(whisper_on_ray(self.placement, self.args, todo))
        else:
            decoded = iter(self.decode(todo))
        out = []
        for key, hit in zip(keys, hits):
            if hit is not None:
                out.append(Heard(True, hit["data"]["text"], model=self.name, request_key=key))
                continue
            text, error = next(decoded)
            if text is None:
                out.append(Heard(False, error=error, model=self.name))
                continue
            if self.cache is not None:
                self.cache.put(key, {"data": {"text": text}, "text": text}, model=self.name, prompt_name=STAGE)
            out.append(Heard(True, text, model=self.name, request_key=key))
        return out


class WhisperWorker:
    """The transcripts stage's Ray worker (``forge.scale.ray_pool``): one faster-whisper replica per
    actor; ``run`` = ``WhisperTranscriber.decode`` on a shard of audio."""

    def __init__(self, model_path: str | None, device: str, compute_type: str, language: str | None) -> None:
        self.t = WhisperTranscriber(model_path, device, compute_type, language)

    def run(self, audio: list) -> list:
        return self.t.decode(audio)


def whisper_on_ray(placement: RayPlacement, args: tuple, audio: list) -> list:
    """``WhisperTranscriber.decode`` results per audio request, in order, from Whisper actors."""
    if not audio:
        return []
    out: list = []
    with actor_pool(placement, partial(WhisperWorker, *args)) as pool:
        for part in map_shards(pool, audio, placement.shard_frames):
            out += part
    return out


def load_whisper(model_path: str | None, device: str = "auto", compute_type: str = "default") -> Any:
    """The faster-whisper model in ``model_path`` (a CTranslate2 directory, never downloaded)."""
    try:
        from faster_whisper import WhisperModel
    except ImportError as exc:
        raise RuntimeError(
            "transcriber='faster-whisper' needs the faster-whisper package, which is an optional extra "
            "(`pip install --group speech`, docs/ingest.md); or set transcriber='llm' "
            "(SUBTEXT_TRANSCRIBER=llm) to use the LLM endpoint's audio.transcriptions"
        ) from exc
    if not model_path or not Path(model_path).is_dir():
        raise RuntimeError(
            "transcriber='faster-whisper' needs whisper_model_path (SUBTEXT_WHISPER_MODEL): a local "
            f"CTranslate2 model directory; got {model_path!r}"
        )
    return WhisperModel(model_path, device=device, compute_type=compute_type, local_files_only=True)


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def transcribe_clips(
    clips: pd.DataFrame,
    videos: pd.DataFrame,
    data_dir: Path,
    ffmpeg: str,
    transcriber: Transcriber | None,
    log: RejectLog,
    *,
    use_subtitles: bool = True,
    language: str | None = None,
    silence_db: float = SILENCE_DB,
    timeout_s: float = 300.0,
    step: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """One row per clip of ``clips`` (``TRANSCRIPT_COLUMNS``); ``transcriber=None`` = off."""
    vids: Mapping[str, Any] = {str(v["video_id"]): v for v in videos.to_dict("records")} if len(videos) else {}
    rows: dict[str, dict[str, Any]] = {}
    pending: list[tuple[str, AudioRequest]] = []
    for c in clips.sort_values("clip_id").to_dict("records"):
        cid = str(c["clip_id"])
        row = {k: c.get(k) for k in ("clip_id", "batch", "source", "video_id")}
        row.update(transcript=None, audio_sha256=None, model=None, request_key=None)
        rows[cid] = row

        def none(status: str, row: dict[str, Any] = row) -> None:
            row.update(transcript_source="none", transcript_status=status)

        subs, sub_status = _text(c.get("transcript")), str(c.get("transcript_status") or "")
        video = vids.get(str(c.get("video_id")))
        if use_subtitles and subs and sub_status in SUBTITLE_STATUSES:
            row.update(transcript=subs, transcript_source="subtitles", transcript_status=sub_status)
        elif transcriber is None:
            none(f"none: speech recognition off; {sub_status or 'no subtitles'}")
        elif video is not None and not bool(video.get("has_audio")):
            none("none: no audio stream")
        elif c.get("audio_rms_db") is not None and pd.notna(c["audio_rms_db"]) and c["audio_rms_db"] <= silence_db:
            # Whisper-family models invent words for silence; there is nothing to hear.
            none(f"none: silent audio ({c['audio_rms_db']:.0f} dB RMS)")
        else:
            src, window = _audio_source(c, video, data_dir)
            if src is None:
                none("error: neither a clip file nor its source video is on disk")
                log.add(cid, "audio_missing", "FileNotFoundError", "no clip file and no source video")
            else:
                try:
                    audio = extract_audio(ffmpeg, src, *window, timeout_s=timeout_s)
                except NoAudioStream:
                    none("none: no audio stream")
                except Exception as exc:  # noqa: BLE001 - a broken file rejects its clip only
                    none(f"error: audio extraction failed ({type(exc).__name__})")
                    log.add_exception(cid, "audio_extraction_failed", exc)
                else:
                    row["audio_sha256"] = sha256_bytes(audio.data)
                    dur = float(c.get("duration_s") or audio.duration_s or 0.0)
                    params = {"language": language} if language else {}
                    pending.append((cid, AudioRequest(cid, audio.data, audio.filename, dur, params)))
        if step and not (pending and pending[-1][0] == cid):
            step(1)  # done here; a queued clip counts when it is heard
    unsupported = 0
    if pending and transcriber is not None:
        heard = transcriber.hear(str(log.partition), [a for _, a in pending])
        for (cid, _), h in zip(pending, heard):
            row = rows[cid]
            row.update(model=h.model or None, request_key=h.request_key or None)
            if not h.ok and h.unsupported:
                row.update(
                    transcript_source="none",
                    transcript_status="none: the endpoint serves no audio.transcriptions "
                    "(set SUBTEXT_TRANSCRIBER=off, or point the llm resource at one that does)",
                )
                unsupported += 1
            elif not h.ok:
                row.update(transcript_source="none", transcript_status="error: transcription failed")
                log.add(cid, "transcription_failed", "TranscriptionError", h.error)
            elif h.text.strip():
                row.update(transcript=h.text.strip(), transcript_source=transcriber.label, transcript_status="ok")
            else:
                row.update(transcript_source=transcriber.label, transcript_status="none: no speech recognised")
            if step:
                step(1)
    if unsupported:
        _log.warning(
            "transcripts: the endpoint serves no audio.transcriptions; %d clip(s) without a transcript", unsupported
        )
    return pd.DataFrame(list(rows.values()), columns=TRANSCRIPT_COLUMNS)


def _audio_source(
    clip: Mapping[str, Any], video: Mapping[str, Any] | None, data_dir: Path
) -> tuple[Path | None, tuple[float | None, float | None]]:
    """The clip file when it exists (already cut), else the source video and the clip's window.
    On object storage a clip or video another node made is fetched from the bucket into this
    machine's work dir first (``objects.localize``); the Whisper actors get the audio's bytes."""
    path = clip.get("path")
    if isinstance(path, str) and path and _present(data_dir, path):
        return data_dir / path, (None, None)
    vpath = video.get("path") if video is not None else None
    if isinstance(vpath, str) and vpath and _present(data_dir, vpath):
        return data_dir / vpath, (float(clip["start_s"]), float(clip["end_s"]))
    return None, (None, None)


def _present(data_dir: Path, rel: str) -> bool:
    """Whether the stored file ``rel`` is on this machine, fetched from the bucket when it is not."""
    if (data_dir / rel).is_file():
        return True
    where = location_of(data_dir)
    return is_remote(where) and (localize(where, [rel]) / rel).is_file()
