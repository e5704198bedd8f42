"""The `transcripts` asset: what is said in each clip (subtitles, else speech recognition).

Logic in forge/media/transcripts.py; the recogniser is the LLM resource's endpoint
(``audio.transcriptions``, cached and on the spend ledger like every call) or a local
faster-whisper model (optional extra). See docs/ingest.md, "Transcripts".
"""

import os
from pathlib import Path

import dagster as dg
import pandas as pd
from pydantic import Field

from assets.common import SINGLE_RUN, Progress, StageRun, batches, contract_check_specs, sum_counts, table_metadata
from forge.llm.cache import open_cache
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
        cache = open_cache(llm.resolved_cache_path())
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
    run = StageRun(context, storage, stage=STAGE)
    transcriber, run.engine = make_transcriber(config, llm)  # the endpoint's engine logs the calls, if any
    store = run.store

    def transcribe(batch: str, log: RejectLog) -> None:
        clips = store.read_batch("clips", batch)
        progress = Progress(context.log, f"transcribe {batch}", len(clips))
        df = transcribe_clips(
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
        run.put(batch, df)
        # each batch's own figures (a run over several batches would otherwise copy the totals to each)
        run.note(batch, transcript_sources=dg.MetadataValue.json(_sources(df)))

    # Through the endpoint, batches run at once on the engine's one budget (StageRun.map_partitions);
    # a local whisper model is not shared across threads, so its batches stay one after another.
    with step_pools():  # Ray replicas (if any) load once for all partitions of the step
        run.map_partitions(transcribe)
    counts = sum_counts(_sources(run.tables["transcripts"][b]) for b in run.parts)  # in batch order
    return run.publish({"transcript_sources": dg.MetadataValue.json(counts), "transcriber": config.transcriber})


def _sources(df: pd.DataFrame) -> dict[str, int]:
    if not len(df) or "transcript_source" not in df:
        return {}
    return {str(k): int(v) for k, v in df["transcript_source"].value_counts().items()}


defs = dg.Definitions(assets=[transcripts])
