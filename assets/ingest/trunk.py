"""Media trunk assets: ``sources`` → ``videos`` → ``clips`` → ``frames`` (group ``ingest``).

``sources`` is unpartitioned: it lists every declared source and registers one dynamic
partition of ``batches`` per ``<source>-<NNNN>`` chunk. The other three are partitioned
by batch with a single-run backfill policy; each loops over the run's partition keys and
writes one Parquet file per batch. Re-run one video with run config
``ops: {videos: {config: {item_ids: [vid_...]}}}`` (same for clips/frames): only those
items are recomputed, the batch's other rows are kept.
"""

from dataclasses import asdict
from pathlib import Path

import dagster as dg
import pandas as pd

from assets.common import (
    SINGLE_RUN,
    Progress,
    StageRun,
    batches,
    contact_sheet,
    contract_check_specs,
    reuse_metadata,
    sum_counts,
    table_metadata,
)
from forge.media.batch import (
    batch_rows,
    carry_rejects,
    clips_for_batch,
    frames_for_batch,
    load_specs,
    merge_restricted,
    videos_for_batch,
)
from forge.media.clips import ClipSettings
from forge.media.frames import FrameSettings
from forge.media.images import ImageSettings
from forge.media.inbox import list_with_inbox
from forge.media.relisting import keep_earlier
from forge.media.sheets import frame_tiles
from forge.media.sources import ytdlp_lister
from forge.provenance.versioning import content_hash
from forge.storage.stage_cache import StageCache, content_key, frame_digest, reuse_batch
from resources.ingest import IngestResource
from resources.storage import StorageResource

VERSION = "ingest-1"
_MEDIA = Path(__file__).resolve().parents[2] / "forge" / "media"


def _code_version(*modules: str) -> str:
    return content_hash(VERSION, files=[_MEDIA / m for m in modules])


class SourcesConfig(dg.Config):
    sources_path: str | None = None  # overrides the `ingest` resource's sources_path for this run


class ItemsConfig(dg.Config):
    item_ids: list[str] = []  # re-run only these items of the batch(es); empty = everything
    reuse: bool = True  # a batch whose inputs, settings and code are unchanged is not redone (item_ids: always redone)


def _reuse(context: dg.AssetExecutionContext, config: ItemsConfig, store) -> StageCache | None:
    return StageCache.for_store(store) if config.reuse and not config.item_ids else None


def _batch_key(context: dg.AssetExecutionContext, cache: StageCache | None, batch: str, *inputs) -> str:
    """What a batch's result depends on: the batch (its rows carry its name), the asset's code
    version, settings, and its input rows and files (volatile columns such as fetch times left out)."""
    if cache is None:
        return ""
    parts = [batch, context.assets_def.code_versions_by_key.get(context.asset_key)]
    for x in inputs:
        if isinstance(x, pd.DataFrame):
            x = frame_digest(x.drop(columns=[c for c in _VOLATILE if c in x.columns]).sort_index(axis=1))
        parts.append(x)
    return content_key(*parts)


_VOLATILE = ("listed_at", "fetched_at")


def _local_digests(cache: StageCache | None, items: pd.DataFrame, column: str = "path") -> list:
    """Content digests of the local files ``items`` name (URLs and missing files: their name only)."""
    if cache is None or items.empty or column not in items:
        return []
    return [cache.file_digest(p) if isinstance(p, str) and Path(p).is_file() else p for p in items[column]]


class ClipsConfig(ItemsConfig):
    segment_s: float = 30.0
    min_tail_s: float = 5.0
    engaging: bool = True
    window_step_s: float = 1.0
    clip_files: str = "reencode"  # reencode | copy | none

    def settings(self) -> ClipSettings:
        return ClipSettings(
            segment_s=self.segment_s,
            min_tail_s=self.min_tail_s,
            engaging=self.engaging,
            window_step_s=self.window_step_s,
            clip_files=self.clip_files,
        )


class FramesConfig(ItemsConfig):
    frames_per_clip: int = 32
    pool: bool = True
    pool_interval_s: float = 1.0
    pool_min_gap_s: float = 3.0
    pool_max_per_video: int = 8
    blur_threshold: float = 50.0
    image_min_side: int = 32
    image_max_side: int = 4096

    def frame_settings(self) -> FrameSettings:
        return FrameSettings(
            frames_per_clip=self.frames_per_clip,
            pool=self.pool,
            pool_interval_s=self.pool_interval_s,
            pool_min_gap_s=self.pool_min_gap_s,
            pool_max_per_video=self.pool_max_per_video,
            blur_threshold=self.blur_threshold,
        )

    def image_settings(self) -> ImageSettings:
        return ImageSettings(min_side=self.image_min_side, max_side=self.image_max_side)


@dg.asset(
    group_name="ingest",
    kinds={"python", "yt-dlp"},
    code_version=_code_version("sources.py", "batch.py"),
    check_specs=contract_check_specs("sources", ["sources", "source_items"]),
    metadata=table_metadata(["sources", "source_items"]),
    description="Lists every source of the sources file (yt-dlp metadata for URLs and searches, "
    "file listings for folders and tables) into `sources` and `source_items`, cuts items into "
    "batches `<source>-<NNNN>` and registers them as `batches` partitions.",
)
def sources(
    context: dg.AssetExecutionContext, config: SourcesConfig, storage: StorageResource, ingest: IngestResource
) -> dg.MaterializeResult:
    run = StageRun(context, storage, tables=["sources", "source_items"])
    store = run.store
    path = config.sources_path or ingest.sources_path
    part, log = run.only()
    inbox = store.data_dir / "inbox" if ingest.read_inbox else None
    policy = ingest.policy(store.data_dir)
    listing = list_with_inbox(
        path,
        inbox,
        ingest.variables,
        log,
        ytdlp_lister(ingest.socket_timeout_s, ingest.retries, policy.max_playlist_items),
        policy,
    )
    # What cannot be listed now (an unset variable, a server down) keeps its earlier rows: never lost.
    listing, kept = keep_earlier(listing, store.read("sources"), store.read("source_items"), log)
    for line in kept.lines():
        context.log.warning(f"sources: {line}")
    for row in log.rows:  # a whole file refused: said at WARNING, not only in the rejects table
        if row["item_id"].startswith(("sources_file:", "inbox:")):
            context.log.warning(f"sources: {row['item_id']} rejected ({row['reason']}): {row['detail']}")
    known = set(context.instance.get_dynamic_partitions(batches.name))
    new = [b for b in listing.batches if b not in known]
    if new:
        context.instance.add_dynamic_partitions(batches.name, new)
    items = listing.items
    by_source = items.groupby("source").size().to_dict() if len(items) else {}
    run.put(part, listing.sources, "sources")
    run.put(part, items, "source_items")
    return run.publish(
        {
            "sources_file": str(path),
            "items_by_source": dg.MetadataValue.json({k: int(v) for k, v in by_source.items()}),
            "batches": dg.MetadataValue.md("\n".join(f"- `{b}`" for b in listing.batches) or "_none_"),
            "new_partitions": len(new),
            "kept_from_earlier_listing": dg.MetadataValue.json(
                {s: {"items": n, "why": kept.reasons[s]} for s, n in kept.items.items()}
            ),
        },
        # the rows name local files, not their content: an edited file changes the data version too
        version_inputs="\n".join(map(str, _local_digests(StageCache.for_store(store), items))),
    )


@dg.asset(
    group_name="ingest",
    kinds={"python", "yt-dlp"},
    deps=[sources],
    partitions_def=batches,
    backfill_policy=SINGLE_RUN,
    code_version=_code_version("download.py", "batch.py"),
    check_specs=contract_check_specs("videos", ["videos"]),
    metadata=table_metadata(["videos"]),
    description="Fetches each video of the batch: yt-dlp Python API for URLs (licence and duration "
    "checked on metadata before download, <=720p, subtitles when available), a copy for local "
    "files; probes it with PyAV and records provenance and sha256. Failures are rejects.",
)
def videos(
    context: dg.AssetExecutionContext, config: ItemsConfig, storage: StorageResource, ingest: IngestResource
) -> dg.MaterializeResult:
    run = StageRun(context, storage)
    store = run.store
    specs = load_specs(store)
    cache = _reuse(context, config, store)
    for batch, log in run.partitions():
        carry_rejects(store, log, config.item_ids)
        todo = batch_rows(store, "source_items", batch, config.item_ids)
        progress = Progress(context.log, f"download {batch}", int((todo["kind"] == "video").sum()) if len(todo) else 0)
        settings = ingest.download_settings(store.data_dir)
        key = _batch_key(
            context,
            cache,
            batch,
            asdict(settings),
            todo,
            _local_digests(cache, todo),
            sorted(s.to_json() for n, s in specs.items() if len(todo) and n in set(todo["source"])),
        )
        df = reuse_batch(
            cache,
            "videos",
            key,
            log,
            lambda batch=batch, log=log, progress=progress, settings=settings: videos_for_batch(
                store, batch, specs, settings, log, config.item_ids, progress.step
            ),
            store.data_dir,
            ("path", "subtitle_path"),
        )
        df = run.put(batch, merge_restricted(store, "videos", batch, df, "video_id", config.item_ids))
        context.log.info(f"{batch}: {len(df)} rows, {len(log)} rejects")
    seconds = run.describe(lambda p: {"video_seconds": round(float(p["duration_s"].sum()), 1)})
    return run.publish({**seconds, **reuse_metadata(cache)})


@dg.asset(
    group_name="ingest",
    kinds={"ffmpeg"},
    deps=[videos],
    partitions_def=batches,
    backfill_policy=SINGLE_RUN,
    code_version=_code_version("clips.py", "batch.py"),
    check_specs=contract_check_specs("clips", ["clips"]),
    metadata=table_metadata(["clips"]),
    description="Fixed-length segments (default 30 s) plus each video's most engaging window, "
    "scored from motion, scene-cut rate and audio energy (docs/ingest.md), cut with ffmpeg; "
    "subtitle text inside each clip's window in `transcript`.",
)
def clips(
    context: dg.AssetExecutionContext, config: ClipsConfig, storage: StorageResource, ingest: IngestResource
) -> dg.MaterializeResult:
    run = StageRun(context, storage)
    store = run.store
    cache = _reuse(context, config, store)
    for batch, log in run.partitions():
        carry_rejects(store, log, config.item_ids)
        progress = Progress(
            context.log, f"clip {batch}", len(batch_rows(store, "videos", batch, config.item_ids, key="video_id"))
        )
        vids = batch_rows(store, "videos", batch, config.item_ids, key="video_id")
        key = _batch_key(
            context,
            cache,
            batch,
            asdict(config.settings()),
            vids,
            _local_digests(cache, vids.assign(path=[str(store.data_dir / p) for p in vids["path"]]))
            if len(vids)
            else [],
        )
        df = reuse_batch(
            cache,
            "clips",
            key,
            log,
            lambda batch=batch, log=log, progress=progress: clips_for_batch(
                store, batch, ingest.ffmpeg(), config.settings(), log, config.item_ids, progress.step
            ),
            store.data_dir,
        )
        df = run.put(batch, merge_restricted(store, "clips", batch, df, "video_id", config.item_ids))
        context.log.info(f"{batch}: {len(df)} rows, {len(log)} rejects")
    with_transcript = run.describe(lambda p: {"clips_with_transcript": int(p["transcript"].notna().sum())})
    return run.publish({**with_transcript, **reuse_metadata(cache)})


@dg.asset(
    group_name="ingest",
    kinds={"python", "ffmpeg"},
    deps=[clips, sources],
    partitions_def=batches,
    backfill_policy=SINGLE_RUN,
    code_version=_code_version("frames.py", "images.py", "batch.py"),
    check_specs=contract_check_specs("frames", ["frames"]),
    metadata=table_metadata(["frames"]),
    description="K uniformly spaced frames per clip and a sharp, spaced-out single-frame pool per "
    "video, by seeking in one open PyAV container; images from folders and tables as one-frame "
    "items (RGB, bad ones rejected, huge ones downscaled).",
)
def frames(
    context: dg.AssetExecutionContext, config: FramesConfig, storage: StorageResource, ingest: IngestResource
) -> dg.MaterializeResult:
    run = StageRun(context, storage)
    store = run.store
    cache = _reuse(context, config, store)
    for batch, log in run.partitions():
        carry_rejects(store, log, config.item_ids)
        vids = batch_rows(store, "videos", batch, config.item_ids, key="video_id")
        imgs = batch_rows(store, "source_items", batch, config.item_ids)
        imgs = imgs[imgs["kind"] == "image"] if len(imgs) else imgs
        image_settings = ingest.image_settings(config.image_settings(), store.data_dir)
        key = _batch_key(
            context,
            cache,
            batch,
            asdict(config.frame_settings()),
            asdict(config.image_settings()),
            vids,
            batch_rows(store, "clips", batch, config.item_ids, key="video_id"),
            imgs,
            _local_digests(cache, imgs),
        )
        df = reuse_batch(
            cache,
            "frames",
            key,
            log,
            lambda batch=batch, log=log, image_settings=image_settings: frames_for_batch(
                store, batch, config.frame_settings(), image_settings, log, config.item_ids
            ),
            store.data_dir,
        )
        df = run.put(batch, merge_restricted(store, "frames", batch, df, "item_id", config.item_ids))
        context.log.info(f"{batch}: {len(df)} rows, {len(log)} rejects")
    for b, p in run.tables["frames"].items():
        run.note(
            b,
            frames_by_kind=dg.MetadataValue.json(_kinds(p)),
            contact_sheet=contact_sheet(frame_tiles(p, store.data_dir), f"frames of {b}"),
        )
    kinds = sum_counts(_kinds(p) for p in run.tables["frames"].values())
    return run.publish({"frames_by_kind": dg.MetadataValue.json(kinds), **reuse_metadata(cache)})


def _kinds(frames: pd.DataFrame) -> dict[str, int]:
    return {k: int(n) for k, n in frames["kind"].value_counts().items()}


defs = dg.Definitions(assets=[sources, videos, clips, frames])
