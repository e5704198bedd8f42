"""Per-batch drivers of the media trunk (Dagster-free; the assets in assets/ingest call these).

Each function takes the table store, one batch key and a RejectLog, and returns the
batch's rows as a DataFrame. A bad item is a reject, never an exception. When
``item_ids`` is given only those items are recomputed and the batch's other rows are
kept from the previous run (see :func:`merge_restricted`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pandas as pd

from forge.media.clips import ClipSettings, attach_transcripts, cut_clip, measure_signals, plan_clips
from forge.media.download import DownloadSettings, Rejected, fetch_video
from forge.media.frames import FrameSettings, frames_for_video, replace_dir, staging_dir
from forge.media.images import ImageReject, ImageSettings, image_frame, read_source_bytes
from forge.media.policy import IngestPolicy
from forge.media.sources import Lister, SourceItem, SourceSpec, expand_source, load_sources, now_utc
from forge.models.dependencies import require_binary
from forge.scale.ray_pool import RayPlacement, configured_placement, map_calls, shards_of
from forge.storage import RejectLog, TableStore, objects, safe_name

Step = Callable[[int], None]


# -- sources -------------------------------------------------------------------------


@dataclass
class Listing:
    sources: pd.DataFrame
    items: pd.DataFrame
    specs: list[SourceSpec]

    @property
    def batches(self) -> list[str]:
        return sorted(self.items["batch"].unique().tolist()) if len(self.items) else []


def list_sources(
    sources_path: str | Path,
    variables: Mapping[str, str],
    log: RejectLog,
    lister: Lister | None = None,
    policy: IngestPolicy | None = None,
) -> Listing:
    specs, bad = load_sources(sources_path, variables, policy)
    for r in bad:
        log.add(r.item_id, r.reason, r.error_class, r.detail)
    now = now_utc()
    src_rows, item_rows = [], []
    for spec in specs:
        exp = expand_source(spec, lister, policy)
        for r in exp.rejects:
            log.add(r.item_id, r.reason, r.error_class, r.detail, related_id=f"source:{spec.name}")
        for it in exp.items:
            item_rows.append({**asdict(it), "listed_at": now})
        src_rows.append(
            {
                "source": spec.name,
                "type": spec.type,
                "license_policy": spec.license_policy,
                "max_duration_s": spec.max_duration_s,
                "max_items": spec.max_items,
                "batch_size": spec.batch_size,
                "spec": spec.to_json(),
                "items": len(exp.items),
                "rejected": len(exp.rejects),
                "batches": len({it.batch for it in exp.items}),
                "sources_file": str(sources_path),
                "listed_at": now,
            }
        )
    return Listing(pd.DataFrame(src_rows), pd.DataFrame(item_rows), specs)


def spec_from_json(text: str) -> SourceSpec:
    doc = json.loads(text)
    for key in ("urls", "subtitle_langs"):
        doc[key] = tuple(doc.get(key) or ())
    # JSON gives the (NAME, value) pairs back as lists: tuples keep the spec hashable
    doc["placeholders"] = tuple((str(n), str(v)) for n, v in doc.get("placeholders") or ())
    return SourceSpec(**doc)


def load_specs(store: TableStore) -> dict[str, SourceSpec]:
    df = store.read("sources")
    return {r.source: spec_from_json(r.spec) for r in df.itertuples()} if len(df) else {}


def batch_rows(
    store: TableStore, table: str, batch: str, item_ids: Iterable[str] | None = None, key: str = "item_id"
) -> pd.DataFrame:
    """Rows of ``batch`` from a per-batch table (its partition file) or from ``source_items``."""
    if table == "source_items":
        df = store.read("source_items", where="batch = ?", params=[batch])
    else:
        df = store.read(table, parts=[batch])
    ids = list(item_ids or [])
    if ids and len(df):
        df = df[df[key].isin(ids)]
    return df


# -- re-running some items of a batch --------------------------------------------------


def merge_restricted(
    store: TableStore, table: str, batch: str, new: pd.DataFrame, key: str, item_ids: Iterable[str] | None
) -> pd.DataFrame:
    """With ``item_ids``, the batch's previous rows for other items plus ``new``; else ``new``."""
    ids = set(item_ids or [])
    if not ids:
        return new
    old = store.read(table, parts=[batch])
    if old.empty:
        return new
    kept = old[~old[key].isin(ids)]
    return pd.concat([kept, new], ignore_index=True) if len(new) else kept.reset_index(drop=True)


def carry_rejects(store: TableStore, log: RejectLog, item_ids: Iterable[str] | None) -> None:
    """Keep the previous rejects of items not being re-run (the reject file is replaced whole)."""
    ids = set(item_ids or [])
    if not ids:
        return
    old = store.read("rejects", parts=[log.part_name()])
    if old.empty:
        return
    keep = old[~old["item_id"].isin(ids) & ~old["related_id"].isin(ids)]
    log.rows[:0] = keep.to_dict("records")


# -- videos --------------------------------------------------------------------------

VIDEO_COLUMNS = [
    "video_id",
    "batch",
    "source",
    "origin",
    "url",
    "source_path",
    "extractor",
    "uploader",
    "channel",
    "upload_date",
    "license",
    "title",
    "duration_s",
    "width",
    "height",
    "fps",
    "has_audio",
    "video_codec",
    "path",
    "bytes",
    "sha256",
    "subtitle_path",
    "subtitle_lang",
    "subtitle_kind",
    "fetched_at",
]


def _item(row: Mapping) -> SourceItem:
    fields = SourceItem.__dataclass_fields__
    return SourceItem(
        **{
            k: (None if pd.isna(v) else v) if not isinstance(v, (list, tuple)) else v
            for k, v in row.items()
            if k in fields
        }
    )


def videos_for_batch(
    store: TableStore,
    batch: str,
    specs: Mapping[str, SourceSpec],
    settings: DownloadSettings,
    log: RejectLog,
    item_ids: Iterable[str] | None = None,
    step: Step | None = None,
) -> pd.DataFrame:
    items = batch_rows(store, "source_items", batch, item_ids)
    items = items[items["kind"] == "video"] if len(items) else items
    rows = []
    for row in items.to_dict("records"):
        item = _item(row)
        spec = specs.get(item.source)
        if spec is None:
            log.add(item.item_id, "unknown_source", "", f"source {item.source!r} not in the sources table")
        else:
            try:
                res = fetch_video(item, spec, store.data_dir, store.media_dir, settings)
            except Exception as exc:  # noqa: BLE001 - a bug in one item must not fail the batch
                res = Rejected(item.item_id, "download_failed", type(exc).__name__, str(exc))
            if isinstance(res, Rejected):
                log.add(res.item_id, res.reason, res.error_class, res.detail)
            else:
                rows.append(asdict(res))
        if step:
            step(1)
    objects.publish_many(store, stored_keys(rows, "path", "subtitle_path"))  # on object storage: into the bucket
    return pd.DataFrame(rows, columns=VIDEO_COLUMNS)


# -- clips ---------------------------------------------------------------------------

CLIP_COLUMNS = [
    "clip_id",
    "batch",
    "source",
    "video_id",
    "kind",
    "clip_index",
    "start_s",
    "end_s",
    "duration_s",
    "is_engaging",
    "path",
    "motion",
    "scene_cuts",
    "scene_rate_per_min",
    "audio_rms_db",
    "engagement_score",
    "transcript",
    "transcript_status",
]


def clips_for_video(video: Mapping, data_dir: Path, media_dir: Path, ffmpeg: str, settings: ClipSettings) -> list[dict]:
    src = data_dir / video["path"]
    has_audio = bool(video["has_audio"])
    sig = measure_signals(src, has_audio, ffmpeg, settings.step_s, settings.cut_threshold, settings.timeout_s)
    plans = plan_clips(video["video_id"], float(video["duration_s"]), sig, settings)
    sub = video.get("subtitle_path")
    sub_file = data_dir / sub if isinstance(sub, str) and sub else None
    attach_transcripts(plans, sub_file, video.get("subtitle_kind"))
    out_dir = media_dir / "clips" / safe_name(video["video_id"])
    # A re-run writes the video's clip files into a staging folder and swaps it in whole at
    # the end: until then the previous files (which the clips table points at) stay.
    stage = staging_dir(out_dir) if settings.clip_files != "none" else None
    rows = []
    try:
        for p in plans:
            path = None
            if stage is not None:
                name = f"{safe_name(p.clip_id)}.mp4"
                cut_clip(
                    ffmpeg,
                    src,
                    stage / name,
                    p.start_s,
                    p.end_s,
                    has_audio,
                    settings.clip_files,
                    settings.crf,
                    settings.timeout_s,
                )
                path = str((out_dir / name).relative_to(data_dir))
            w = p.window
            rows.append(
                {
                    "clip_id": p.clip_id,
                    "batch": video["batch"],
                    "source": video["source"],
                    "video_id": p.video_id,
                    "kind": p.kind,
                    "clip_index": p.clip_index,
                    "start_s": round(p.start_s, 3),
                    "end_s": round(p.end_s, 3),
                    "duration_s": round(p.end_s - p.start_s, 3),
                    "is_engaging": p.is_engaging,
                    "path": path,
                    "motion": round(min(max(w.motion, 0.0), 1.0), 6),
                    "scene_cuts": w.scene_cuts,
                    "scene_rate_per_min": round(w.scene_rate_per_min, 3),
                    "audio_rms_db": None if w.audio_rms_db is None else round(w.audio_rms_db, 3),
                    "engagement_score": w.score,
                    "transcript": p.transcript,
                    "transcript_status": p.transcript_status,
                }
            )
        if stage is not None:
            replace_dir(stage, out_dir)
        else:
            shutil.rmtree(out_dir, ignore_errors=True)  # no clip files this time: drop the old ones
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
    return rows


def clips_for_batch(
    store: TableStore,
    batch: str,
    ffmpeg: str,
    settings: ClipSettings,
    log: RejectLog,
    item_ids: Iterable[str] | None = None,
    step: Step | None = None,
) -> pd.DataFrame:
    videos = batch_rows(store, "videos", batch, item_ids, key="video_id")
    rows: list[dict] = []
    if len(videos):  # checked once: a missing ffmpeg fails the step instead of rejecting every video
        require_binary(ffmpeg, "ffmpeg", "set the ingest resource's ffmpeg_path or install imageio-ffmpeg")
    for v in videos.to_dict("records"):
        try:
            objects.fetch_many(store, stored_keys([v], "path", "subtitle_path"))  # another node's download
            made = clips_for_video(v, store.data_dir, store.media_dir, ffmpeg, settings)
            objects.publish_many(store, stored_keys(made, "path"))
            rows += made
        except Exception as exc:  # noqa: BLE001 - ffmpeg failure on one video is a reject
            log.add_exception(v["video_id"], "clip_failed", exc)
        if step:
            step(1)
    return pd.DataFrame(rows, columns=CLIP_COLUMNS)


# -- frames --------------------------------------------------------------------------

FRAME_COLUMNS = [
    "frame_id",
    "batch",
    "source",
    "item_id",
    "clip_id",
    "kind",
    "frame_index",
    "timestamp_s",
    "path",
    "width",
    "height",
    "blur_var",
    "caption",
    "sha256",
    "transform",
]


# A reject as ``RejectLog.add`` arguments: (item_id, reason, error_class, detail, related_id).
# Plain tuples, so a unit run in a Ray task sends its rejects back without pickling exceptions.
RejectArgs = tuple[str, str, str, str, str | None]


def _exc_reject(item_id: str, reason: str, exc: BaseException, related_id: str | None = None) -> RejectArgs:
    return (str(item_id), reason, type(exc).__name__, str(exc) or repr(exc), related_id)  # = add_exception


def video_frames_unit(
    v: Mapping, batch: str, data_dir: Path, media_dir: Path, fsettings: FrameSettings
) -> tuple[list[dict], list[RejectArgs]]:
    """Frames rows and rejects of one video (one unit of work: in-process or a Ray task)."""
    out_dir = media_dir / "frames" / safe_name(v["video_id"])
    stage = staging_dir(out_dir)  # re-run: new files swapped in whole, the old ones stay until then
    try:
        vf = frames_for_video(
            data_dir / v["path"], v["video_id"], float(v["duration_s"]), list(v["clips"]), stage, data_dir, fsettings
        )
        replace_dir(stage, out_dir)
    except Exception as exc:  # noqa: BLE001
        return [], [_exc_reject(v["video_id"], "decode_error", exc)]
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    staged, final = os.path.relpath(stage, data_dir), os.path.relpath(out_dir, data_dir)
    rows = [
        {**r, "path": os.path.join(final, os.path.relpath(r["path"], staged)), "batch": batch, "source": v["source"]}
        for r in vf.rows
    ]
    rejects: list[RejectArgs] = [
        (
            fid,
            "blurry",
            "",
            f"pool candidate at {t:.2f}s: Laplacian variance {var:.1f} < {fsettings.blur_threshold}",
            v["video_id"],
        )
        for fid, t, var in vf.blurry
    ]
    return rows, rejects


def image_frames_unit(
    items: list[dict], batch: str, data_dir: Path, img_dir: Path, isettings: ImageSettings
) -> tuple[list[dict], list[RejectArgs]]:
    """Frames rows and rejects of a run of image items (decode, normalise, re-encode each). An item
    ``images_to_bucket`` staged is read from its fetched object in ``data_dir`` (this node's own
    work dir, inside the policy's roots as the data dir always is), or rejected as its driver found."""
    rows: list[dict] = []
    rejects: list[RejectArgs] = []
    if isettings.policy.roots is not None and any(it.get("source_key") for it in items):
        isettings = replace(isettings, policy=isettings.policy.with_roots(data_dir))
    for it in items:
        try:
            if it.get("source_reject"):
                reason, error_class, detail = it["source_reject"]
                raise ImageReject(reason, detail, error_class)
            if it.get("source_key"):
                it = {**it, "path": str(data_dir / it["source_key"])}
            rows.append({**image_frame(it, img_dir, data_dir, isettings), "batch": batch, "source": it["source"]})
        except ImageReject as exc:
            rejects.append((it["item_id"], exc.reason, exc.error_class or "ImageReject", str(exc), None))
        except Exception as exc:  # noqa: BLE001
            rejects.append(_exc_reject(it["item_id"], "decode_error", exc))
    return rows, rejects


def frames_for_batch(
    store: TableStore,
    batch: str,
    fsettings: FrameSettings,
    isettings: ImageSettings,
    log: RejectLog,
    item_ids: Iterable[str] | None = None,
    step: Step | None = None,
    placement: RayPlacement | None = None,
) -> pd.DataFrame:
    """Frames of the batch's videos (one unit per video) and images (units of ``shard_frames``).

    ``placement`` (default: config's ``scale.stages.frames``) runs the units as Ray tasks; the
    rows and rejects are the in-process ones, in the same order (videos, then images).
    """
    placement = placement if placement is not None else configured_placement("frames")
    videos = batch_rows(store, "videos", batch, item_ids, key="video_id")
    clips = batch_rows(store, "clips", batch, item_ids, key="video_id")
    calls: list[tuple[Callable, tuple, int]] = []  # (unit, its arguments, items it covers)
    for v in videos.to_dict("records"):
        vclips = clips[clips["video_id"] == v["video_id"]] if len(clips) else clips
        vclips = vclips[["clip_id", "start_s", "end_s"]].to_dict("records") if len(vclips) else []
        unit = {k: v[k] for k in ("video_id", "path", "duration_s", "source")} | {"clips": vclips}
        calls.append((video_frames_unit, (unit, batch, store.data_dir, store.media_dir, fsettings), 1))
        if store.remote is not None:  # the task fetches the video into its node's work dir, puts frames back
            calls[-1] = (frames_on_bucket, (store.location, video_frames_unit, (unit, batch), "", (fsettings,)), 1)
    images = batch_rows(store, "source_items", batch, item_ids)
    images = images[images["kind"] == "image"] if len(images) else images
    items = [
        {k: (None if not isinstance(v, (list, tuple)) and pd.isna(v) else v) for k, v in it.items()}
        for it in images.to_dict("records")
    ]
    if store.remote is not None:  # a local source file is on this machine only: put it to the bucket
        items = images_to_bucket(store, items, isettings)
    for part in shards_of(items, placement.shard_frames):
        calls.append(
            (image_frames_unit, (part, batch, store.data_dir, store.media_dir / "images", isettings), len(part))
        )
        if store.remote is not None:
            calls[-1] = (
                frames_on_bucket,
                (store.location, image_frames_unit, (part, batch), "images", (isettings,)),
                len(part),
            )
    rows: list[dict] = []
    results = map_calls(placement, frames_unit, [(fn, args) for fn, args, _ in calls])
    for (_, _, n), (unit_rows, rejects) in zip(calls, results):
        rows += unit_rows
        for r in rejects:
            log.add(*r)
        if step:
            step(n)
    return pd.DataFrame(rows, columns=FRAME_COLUMNS)


SOURCE_IMAGES = "media/sources"  # local source images on object storage, under their content keys


def images_to_bucket(store: TableStore, items: list[dict], isettings: ImageSettings) -> list[dict]:
    """Image items as a node that shares only the bucket can read them: an item read from a local
    source file (which only this, the driver's, machine has) is read here under the same rules as
    in the unit (the policy's roots, a regular file, the size cap) and put once under its content
    key (``media/sources/<sha[:2]>/<sha><suffix>``, ``If-None-Match: *``: a re-run writes nothing
    again), and then names that key (``source_key``) instead of its path; a file refused here
    carries its reject (``source_reject``) to the unit, which records it as before. URL items are
    downloaded by the unit, as before."""
    out: list[dict] = []
    for it in items:
        path = it.get("path")
        if not path:
            out.append(it)
            continue
        try:
            data = read_source_bytes(path, None, isettings.fetch_timeout_s, isettings.max_bytes, isettings.policy)
        except ImageReject as exc:
            out.append({**it, "path": None, "source_reject": (exc.reason, exc.error_class or "ImageReject", str(exc))})
            continue
        key = objects.content_key(data, SOURCE_IMAGES, Path(str(path)).suffix.lower())
        objects.put_once(store, key, data)
        out.append({**it, "path": None, "source_key": key})
    return out


def frames_unit(fn: Callable, args: tuple) -> tuple[list[dict], list[RejectArgs]]:
    """One unit of the frames stage (what ``map_calls`` runs: videos and images in one submit)."""
    return fn(*args)


def stored_keys(rows: Iterable[Mapping], *columns: str) -> list[str]:
    """The data-location keys the rows' ``columns`` name (relative stored paths; absolute paths,
    files outside the data location, are left out)."""
    return [r[c] for r in rows for c in columns if isinstance(r.get(c), str) and r[c] and not os.path.isabs(r[c])]


def frames_on_bucket(
    location: str, fn: Callable, head: tuple, sub: str, tail: tuple
) -> tuple[list[dict], list[RejectArgs]]:
    """A frames unit on object storage, wherever Ray runs it: this node's own store (its own work
    dir), the unit's video fetched from the bucket, ``fn`` run as in-process, its frames put back
    (one PUT each, none when the same bytes are there: a retried task writes no second copy)."""
    store = objects.worker_store(location)
    inputs = [head[0]] if isinstance(head[0], Mapping) else head[0]  # a video unit, or a shard of image items
    objects.fetch_many(store, stored_keys(inputs, "path", "source_key"))
    out_dir = store.media_dir / sub if sub else store.media_dir
    rows, rejects = fn(*head, store.data_dir, out_dir, *tail)
    objects.publish_many(store, stored_keys(rows, "path"))
    return rows, rejects
