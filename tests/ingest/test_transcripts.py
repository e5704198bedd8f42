"""Speech transcripts for clips (ViMU Stage 1): subtitles when present, else the clip's audio through
the LLM endpoint's audio.transcriptions (the test double), cached and on the ledger; a clip without
audio records source none; the transcript reaches the ViMU annotation prompt."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
from PIL import Image

from assets.ingest.speech import transcripts
from forge.llm.backends import StubBackend
from forge.llm.cache import LLMCache
from forge.llm.engine import LLMEngine
from forge.llm.ledger import read_ledger
from forge.llm.stub import STUB_MARK
from forge.media.audio import NoAudioStream, extract_audio
from forge.media.download import ffmpeg_exe
from forge.media.transcripts import EngineTranscriber, load_whisper, transcribe_clips
from forge.storage import RejectLog, TableStore
from resources.ingest import IngestResource
from resources.storage import StorageResource
from tests.llm_double import Reply

BATCH = "speech-0000"


def _make_clip(ff: str, dst: Path, audio: bool) -> None:
    """A 3 s test-pattern clip, with a 440 Hz sine tone as its audio track or with no audio at all."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    cmd = [ff, "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10:duration=3"]
    if audio:
        cmd += ["-f", "lavfi", "-i", "sine=frequency=440:duration=3", "-c:a", "aac", "-shortest"]
    subprocess.run([*cmd, "-c:v", "libx264", "-pix_fmt", "yuv420p", str(dst)], check=True, timeout=60)


@pytest.fixture
def corpus(tmp_path):
    """Four clips: a sine tone, a video without an audio stream (the table says it has one: ffmpeg
    finds out), a video the table marks silent, and one with subtitles."""
    ff = ffmpeg_exe()
    data = tmp_path / "data"
    _make_clip(ff, data / "media/clips/tone.mp4", audio=True)
    _make_clip(ff, data / "media/clips/mute.mp4", audio=False)
    clips, videos = [], []
    for cid, path, has_audio, subs in (
        ("c_tone", "media/clips/tone.mp4", True, None),
        ("c_mute", "media/clips/mute.mp4", True, None),
        ("c_noaudio", "media/clips/mute.mp4", False, None),
        ("c_subs", "media/clips/tone.mp4", True, "Hello from the subtitles."),
    ):
        vid = f"v_{cid}"
        clips.append(
            {
                "clip_id": cid,
                "batch": BATCH,
                "source": "demo",
                "video_id": vid,
                "start_s": 0.0,
                "end_s": 3.0,
                "duration_s": 3.0,
                "path": path,
                "audio_rms_db": -20.0,
                "transcript": subs,
                "transcript_status": "subtitles" if subs else "none: no subtitle track",
            }
        )
        videos.append({"video_id": vid, "batch": BATCH, "source": "demo", "has_audio": has_audio, "path": path})
    return data, ff, pd.DataFrame(clips), pd.DataFrame(videos)


def test_audio_is_small_mono_flac_and_stable(corpus):
    data, ff, _, _ = corpus
    a, b = extract_audio(ff, data / "media/clips/tone.mp4"), extract_audio(ff, data / "media/clips/tone.mp4")
    assert a.data[:4] == b"fLaC" and a.data == b.data  # bit-exact: the cache key holds
    assert 10_000 < len(a.data) < 3 * 16_000 * 2  # under 16 kHz mono 16-bit PCM of 3 s
    with pytest.raises(NoAudioStream):
        extract_audio(ff, data / "media/clips/mute.mp4")


def test_tone_clip_transcribed_through_the_double_cached_and_on_the_ledger(corpus, llm_double, llm_double_resource):
    data, ff, clips, videos = corpus
    llm_double.transcript = "heard {bytes} bytes"
    llm = llm_double_resource()
    log = RejectLog("transcripts", BATCH)
    out = transcribe_clips(clips, videos, data, ff, EngineTranscriber(llm.engine()), log).set_index("clip_id")

    sent = llm_double.transcription_requests
    assert len(sent) == 1 and sent[0]["model"] == "whisper-1" and sent[0]["filename"] == "audio.flac"
    tone = out.loc["c_tone"]
    assert tone["transcript"] == f"heard {sent[0]['bytes']} bytes" and sent[0]["bytes"] > 10_000
    assert tone["transcript_source"] == "openai:whisper-1" and tone["transcript_status"] == "ok"
    assert out.loc["c_subs", "transcript_source"] == "subtitles"
    assert out.loc["c_subs", "transcript"] == "Hello from the subtitles."
    for cid in ("c_mute", "c_noaudio"):  # no audio is a fact, not an error
        assert out.loc[cid, "transcript_source"] == "none"
        assert out.loc[cid, "transcript_status"] == "none: no audio stream" and pd.isna(out.loc[cid, "transcript"])
    assert log.rows == []

    ledger = read_ledger(llm.resolved_ledger_path())
    assert list(ledger["kind"]) == ["call"] and ledger["item_id"].iloc[0] == "c_tone"
    assert ledger["prompt_name"].iloc[0] == "audio_transcription" and ledger["status"].iloc[0] == "ok"
    assert ledger["cost_usd"].iloc[0] == pytest.approx(3.0 / 60 * 0.006)  # whisper-1, by audio minute

    # A re-run (a new engine, same cache file) pays nothing: no second request, a cache-hit row.
    again = transcribe_clips(clips, videos, data, ff, EngineTranscriber(llm.engine()), RejectLog("t", BATCH))
    assert len(llm_double.transcription_requests) == 1
    assert again.set_index("clip_id").loc["c_tone", "transcript"] == tone["transcript"]
    assert list(read_ledger(llm.resolved_ledger_path())["kind"]) == ["call", "cache_hit"]


def test_transient_errors_are_retried_and_a_refusal_is_a_reject(corpus, llm_double, llm_double_resource):
    data, ff, clips, videos = corpus
    tone = clips[clips.clip_id == "c_tone"]
    llm_double.audio_replies.extend([Reply.error(500), Reply.text("retried fine")])
    llm = llm_double_resource(backoff_base_s=0.01)
    out = transcribe_clips(tone, videos, data, ff, EngineTranscriber(llm.engine()), RejectLog("t", BATCH))
    assert out["transcript"].iloc[0] == "retried fine" and len(llm_double.transcription_requests) == 2

    llm_double.audio_replies.append(Reply.error(400, "unsupported audio"))
    log = RejectLog("transcripts", BATCH)
    fresh = llm_double_resource(cache_path=str(data / "other_cache.sqlite"))
    out = transcribe_clips(tone, videos, data, ff, EngineTranscriber(fresh.engine()), log)
    assert out["transcript_source"].iloc[0] == "none" and out["transcript_status"].iloc[0].startswith("error:")
    assert [(r["item_id"], r["reason"]) for r in log.rows] == [("c_tone", "transcription_failed")]
    assert "unsupported audio" in log.rows[0]["detail"]


def test_stub_transcript_is_marked_and_never_passes_as_speech(corpus, tmp_path):
    data, ff, clips, videos = corpus
    engine = LLMEngine(StubBackend(), LLMCache(None))
    out = transcribe_clips(clips, videos, data, ff, EngineTranscriber(engine), RejectLog("t", BATCH))
    tone = out.set_index("clip_id").loc["c_tone"]
    assert tone["transcript_source"] == "stub" and STUB_MARK in tone["transcript"]
    assert "not transcribed" in tone["transcript"]


def test_recognition_off_keeps_subtitles_and_says_why(corpus):
    data, ff, clips, videos = corpus
    out = transcribe_clips(clips, videos, data, ff, None, RejectLog("t", BATCH)).set_index("clip_id")
    assert out.loc["c_subs", "transcript_source"] == "subtitles"
    assert out.loc["c_tone", "transcript_status"].startswith("none: speech recognition off")


def test_faster_whisper_missing_names_the_setting():
    try:
        import faster_whisper  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="transcriber='faster-whisper'.*optional extra"):
            load_whisper("/nonexistent")
    else:
        with pytest.raises(RuntimeError, match="whisper_model_path"):
            load_whisper(None)


def test_faster_whisper_local_model(corpus):
    pytest.importorskip(
        "faster_whisper", reason="faster-whisper is an optional extra (`pip install --group speech`), not installed"
    )
    import os

    model = os.environ.get("SUBTEXT_WHISPER_MODEL")
    if not model or not Path(model).is_dir():
        pytest.skip("no local faster-whisper model: set SUBTEXT_WHISPER_MODEL to a CTranslate2 model directory")
    from forge.media.transcripts import WhisperTranscriber

    data, ff, clips, videos = corpus
    out = transcribe_clips(clips, videos, data, ff, WhisperTranscriber(model), RejectLog("t", BATCH))
    assert out.set_index("clip_id").loc["c_tone", "transcript_source"] == "faster-whisper"


def test_transcript_reaches_the_vimu_annotation_prompt(corpus, llm_double, llm_double_resource):
    """transcripts asset → evidence → vimu_annotations: the recognised text is in the request body."""
    from assets.recipes.vimu.assets import vimu_annotations
    from assets.recipes.vimu.checks import CHECKS
    from forge.vision.evidence import build_evidence

    data, _, clips, videos = corpus
    store = TableStore(data)
    store.write("clips", clips.assign(kind="segment"), BATCH)
    store.write("videos", videos, BATCH)
    llm_double.transcript = "Oh great, another Monday meeting."
    llm = llm_double_resource()
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    resources = {"storage": StorageResource(data_dir=str(data)), "llm": llm, "ingest": IngestResource()}
    res = dg.materialize([transcripts], partition_key=BATCH, instance=instance, resources=resources)
    assert res.success
    table = store.read("transcripts").set_index("clip_id")
    assert table.loc["c_tone", "transcript_source"] == "openai:whisper-1"
    calls = store.read("llm_calls")
    assert set(calls["stage"]) == {"transcripts"} and calls["outcome"].tolist() == ["ok"]

    # evidence for the tone clip (one frame), built from the transcripts table
    rel = "media/frames/c_tone_0.jpg"
    (data / rel).parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (32, 24), (200, 10, 10)).save(data / rel)
    frames = pd.DataFrame(
        [
            {
                "frame_id": "c_tone_f0",
                "batch": BATCH,
                "source": "demo",
                "item_id": "v_c_tone",
                "clip_id": "c_tone",
                "kind": "clip_frame",
                "frame_index": 0,
                "timestamp_s": 1.0,
                "path": rel,
                "width": 32,
                "height": 24,
            }
        ]
    )
    empty = pd.DataFrame(columns=["frame_id", "tag", "score", "label", "person_index", "annotated_path", "selected"])
    ev = build_evidence(
        frames, empty, empty, pd.DataFrame(), clips, empty, "yolo", transcripts=store.read("transcripts")
    )
    assert ev.set_index(["unit", "unit_id"]).loc[("clip", "c_tone"), "transcript_source"] == "openai:whisper-1"
    store.write("frames", frames, BATCH)
    store.write("evidence", ev, BATCH)
    res = dg.materialize(
        [vimu_annotations, *CHECKS],
        partition_key=BATCH,
        instance=instance,
        resources=resources,
        selection=[vimu_annotations.key],
    )
    assert res.success
    bodies = [json.dumps(b) for b in llm_double.chat_requests if "vimu_annotate" in json.dumps(b["response_format"])]
    assert len(bodies) == 1
    assert "Oh great, another Monday meeting." in bodies[0]
    assert "automatic speech recognition, openai:whisper-1" in bodies[0]


def test_an_endpoint_without_transcriptions_leaves_clips_without_a_transcript_not_rejected(
    corpus, llm_double, llm_double_resource
):
    """A chat-only server answers 404 on the audio route: that says nothing about the clip."""
    data, ff, clips, videos = corpus
    tone = clips[clips.clip_id == "c_tone"]
    llm_double.audio_replies.append(Reply.error(404, "Not Found"))
    log = RejectLog("transcripts", BATCH)
    out = transcribe_clips(tone, videos, data, ff, EngineTranscriber(llm_double_resource().engine()), log)
    assert out["transcript_source"].iloc[0] == "none"
    assert "serves no audio.transcriptions" in out["transcript_status"].iloc[0]
    assert log.rows == []
