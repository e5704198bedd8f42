"""The `transcripts` asset: what is said in each clip (subtitles, else speech recognition).

Logic in forge/media/transcripts.py; the recogniser is the LLM resource's endpoint
(``audio.transcriptions``, cached and on the spend ledger like every call) or a local
faster-whisper model (optional extra). See docs/ingest.md, "Transcripts".
"""

import os
import time
from pathlib import Path

import dagster as dg
import pandas as pd
from pydantic import Field

from assets.common import SINGLE_RUN, Progress, batches, contract_check_specs, partition_keys, publish, table_metadata
from assets.llm_support import llm_partition_metadata, record_llm_calls
from forge.llm.cache import LLMCache
from forge.media.transcripts import (
    STAGE,
    TRANSCRIBERS,
    EngineTranscriber,
    Transcriber,
    WhisperTranscriber,
    transcribe_clips,
)
from forge.provenance.versioning import content_hash
from forge.scale.ray_pool import configured_placement, step_pools
from forge.storage import RejectLog
from resources.ingest import IngestResource
from resources.llm import LLMResource
from resources.storage import StorageResource

_MEDIA = Path(__file__).resolve().parents[2] / "forge" / "media"


class TranscriptsConfig(dg.Config):
    transcriber: str = Field(
        default=os.environ.get("SUBTEXT_TRANSCRIBER", "llm"),
        description="llm (the LLM resource's audio.transcriptions) | faster-whisper (local model, "
        "optional extra) | off (subtitles only); env SUBTEXT_TRANSCRIBER",
    )
    use_subtitles: bool = Field(default=True, description="a clip's subtitles win over recognised speech")
    language: str | None = Field(default=None, description="ISO-639-1 hint for the recogniser; None = detect")
    whisper_model_path: str | None = Field(
        default=os.environ.get("SUBTEXT_WHISPER_MODEL") or None,
        description="faster-whisper: a local CTranslate2 model directory (env SUBTEXT_WHISPER_MODEL); never downloaded",
    )
    whisper_device: str = "auto"
    whisper_compute_type: str = "default"


def make_transcriber(config: TranscriptsConfig, llm: LLMResource) -> tuple[Transcriber | None, object | None]:
    """The configured recogniser, and the LLM engine behind it (for the call log), if any."""
    if config.transcriber not in TRANSCRIBERS:
        raise ValueError(f"transcripts.transcriber must be one of {TRANSCRIBERS}, not {config.transcriber!r}")
    if config.transcriber == "off":
        return None, None
    if config.transcriber == "faster-whisper":
        cache = LLMCache(llm.resolved_cache_path())
        return (
            WhisperTranscriber(
                config.whisper_model_path,
                config.whisper_device,
                config.whisper_compute_type,
                config.language,
                cache,
                configured_placement("transcripts"),
            ),
            None,
        )
    engine = llm.engine()
    return EngineTranscriber(engine), engine


@dg.asset(
    group_name="ingest",
    kinds={"ffmpeg", "openai"},
    deps=["clips", "videos"],
    partitions_def=batches,
    backfill_policy=SINGLE_RUN,
    code_version=content_hash("transcripts-1", files=[_MEDIA / "transcripts.py", _MEDIA / "audio.py"]),
    check_specs=contract_check_specs("transcripts", ["transcripts"]),
    metadata=table_metadata(["transcripts"]),
    description="What is said in each clip (ViMU Stage 1): its subtitles, else its audio (mono 16 kHz) "
    "transcribed by the LLM endpoint's audio.transcriptions (cached, on the ledger) or a local "
    "faster-whisper model; `transcript_source` says which, `transcript_status` why a text is empty.",
)
def transcripts(
    context: dg.AssetExecutionContext,
    config: TranscriptsConfig,
    storage: StorageResource,
    ingest: IngestResource,
    llm: LLMResource,
) -> dg.MaterializeResult:
    started, store = time.perf_counter(), storage.store
    transcriber, engine = make_transcriber(config, llm)
    keys = partition_keys(context)
    logs = [RejectLog(STAGE, batch) for batch in keys]

    def transcribe(batch: str, log: RejectLog) -> pd.DataFrame:
        clips = store.read_batch("clips", batch)
        progress = Progress(context.log, f"transcribe {batch}", len(clips))
        return transcribe_clips(
            clips,
            store.read_batch("videos", batch),
            store.data_dir,
            ingest.ffmpeg(),
            transcriber,
            log,
            use_subtitles=config.use_subtitles,
            language=config.language,
            step=progress.step,
        )

    # Through the endpoint, batches run at once on the engine's one budget; a local whisper
    # model is not shared across threads, so its batches stay one after another.
    with step_pools():  # Ray replicas (if any) load once for all partitions of the step
        done = (
            engine.map_partitions(keys, lambda b: transcribe(b, logs[keys.index(b)]))
            if engine is not None
            else [transcribe(b, log) for b, log in zip(keys, logs)]
        )
    parts = dict(zip(keys, done))
    counts: dict[str, int] = {}
    for p in parts.values():
        for src, n in p["transcript_source"].value_counts().items():
            counts[str(src)] = counts.get(str(src), 0) + int(n)
    md: dict[str, object] = {"transcript_sources": dg.MetadataValue.json(counts), "transcriber": config.transcriber}
    # each batch's own figures (a run over several batches would otherwise copy the totals to each)
    part_md: dict[str, dict[str, object]] = {
        b: {"transcript_sources": dg.MetadataValue.json(_sources(p))} for b, p in parts.items()
    }
    if engine is not None:
        md.update(record_llm_calls(store, engine, [(STAGE, b) for b in keys]))
        calls = engine.calls_frame()
        for b in keys:
            part_md[b].update(llm_partition_metadata(calls, b, [STAGE]))
    return publish(
        store,
        {"transcripts": parts},
        rejects=logs,
        metadata=md,
        started=started,
        context=context,
        part_metadata=part_md,
    )


def _sources(df: pd.DataFrame) -> dict[str, int]:
    if not len(df) or "transcript_source" not in df:
        return {}
    return {str(k): int(v) for k, v in df["transcript_source"].value_counts().items()}


defs = dg.Definitions(assets=[transcripts])
