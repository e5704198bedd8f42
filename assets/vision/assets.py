"""Vision evidence assets (group ``vision``), partitioned by batch, one run per backfill.

Model stages sit in the ``gpu`` pool and take their model from a resource that loads it once
per process; frames are decoded in a thread pool ahead of the model.
"""

import warnings
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
    table_metadata,
)
from forge.media.sheets import indicator_tiles
from forge.provenance.versioning import content_hash
from forge.scale.ray_pool import configured_placement, placement_dict, step_pools
from forge.storage import TableStore, register_view
from forge.storage.stage_cache import StageCache, content_key
from forge.vision.detector import DETECTION_COLUMNS
from forge.vision.evidence import build_evidence
from forge.vision.pipeline import DecodeOptions, add_phases, run_detection, run_indicators, run_ram, select_kept
from forge.vision.scenes import RichSceneRule, count_persons, rank_rich_scenes
from forge.vision.settings import vision_default, vision_section
from forge.vision.tag_worker import ram_on_ray
from forge.vision.tagger import TAG_COLUMNS, tags_from_detections
from resources.detector import DetectorResource, default_detector
from resources.storage import StorageResource
from resources.tagger import TaggerResource, default_tagger, tagger_version

VERSION = "vision-1"
RANDOM_WARNING = (
    "RANDOM WEIGHTS: the detector was built from an architecture yaml; detections, tags and person "
    "counts are meaningless. Set SUBTEXT_YOLO_WEIGHTS to a real yolo11n.pt (see docs/vision.md)."
)


def configured_versions() -> dict[str, str]:
    """Code versions of the assets that run a configured model or rule: the configured models
    (weights identity, thresholds, tagger backend) and the rich-scene rule of config/vision.yaml,
    so swapping random for real weights or editing the rule marks exactly these and their
    descendants changed in the UI. Read when the definitions load (``defs``), never at import."""
    detector = default_detector().model_version()
    return {
        "detections": content_hash(VERSION, detector),
        "tags": content_hash(VERSION, detector, tagger_version(default_tagger())),
        "rich_scenes": content_hash(VERSION, vision_section("rich_scenes")),
    }


class DecodeConfig(dg.Config):
    # defaults: config/vision.yaml ``decode:``, read when a run builds its config
    max_side: int = vision_default("decode", "max_side", 1920, int)
    min_side: int = vision_default("decode", "min_side", 8, int)
    max_pixels: int = vision_default("decode", "max_pixels", 400_000_000, int)
    workers: int = vision_default("decode", "workers", 4, int)
    reuse: bool = True  # detections: reuse the boxes of unchanged images (same weights and settings)

    def options(self) -> DecodeOptions:
        return DecodeOptions(self.max_side, self.min_side, self.max_pixels, self.workers)


class RichSceneConfig(dg.Config):
    # defaults: config/vision.yaml ``rich_scenes:`` (VAGUE §4.1.2-4.1.3), read when a run builds its config
    min_persons: int = vision_default("rich_scenes", "min_persons", 1, int)
    min_tags: int = vision_default("rich_scenes", "min_tags", 1, int)
    top_n: int | None = vision_default("rich_scenes", "top_n", None, int)
    top_fraction: float | None = vision_default("rich_scenes", "top_fraction", 0.5, float)


# rich_scenes ranks within a batch partition (so a new batch never rewrites old files); this
# view ranks every kept frame of a source across all its batches (VAGUE's global top-N).
register_view(
    "rich_scenes_by_source",
    "select *, row_number() over (partition by source order by n_tags desc, n_persons desc, frame_id) "
    "as source_rank from rich_scenes",
)


def vision_frames(store: TableStore, batch: str) -> pd.DataFrame:
    """Kept frames of the batch that the detector could decode (the frames vision saw)."""
    frames = select_kept(store.read_batch("frames", batch), store.read_batch("duplicates", batch))
    rej = store.read("rejects", parts=[f"detections__{batch}"])
    if not rej.empty:
        frames = frames[~frames["frame_id"].isin(set(rej["item_id"]))]
    return frames


def _model_md(det: DetectorResource) -> dict:
    md = {"model": det.weights, "random_weights": det.is_random}
    if det.is_random:
        md["WARNING"] = RANDOM_WARNING
    return md


@dg.asset(
    group_name="vision",
    partitions_def=batches,
    backfill_policy=SINGLE_RUN,
    pool="gpu",
    kinds={"pytorch", "parquet"},
    deps=["frames", "duplicates"],
    code_version=VERSION,  # with the configured detector: configured_versions()
    check_specs=contract_check_specs("detections", ["detections"]),
    metadata=table_metadata(["detections"]),
    description="Ultralytics YOLO boxes on the kept frames (batched, prefetched decode, GPU + fp16 when present).",
)
def detections(
    context: dg.AssetExecutionContext, config: DecodeConfig, storage: StorageResource, detector: DetectorResource
):
    run = StageRun(context, storage)
    store = run.store
    opts = config.options()
    opts.workers = detector.decode_workers
    cache = StageCache.for_store(store) if config.reuse else None
    # boxes of an unchanged image from the same weights and settings are reused (stage_cache.py);
    # the model is loaded only when some frame needs it
    setup = detector.expected_setup()
    model_key = [
        VERSION,
        detector.weights,
        cache.tree_digest(detector.weights) if cache else "",
        detector.conf,
        detector.iou,
        detector.imgsz,
        opts.load_kwargs(),
        # engine, device kind, fp16 as resolved (so no raw ``half``), decode path: engines agree
        # within rounding, not bit for bit, so rows are reused only from the setup that runs now
        setup,
    ]
    totals = {"frames": 0, "computed": 0, "rejected": 0, "model_s": 0.0, "wall_s": 0.0}
    model, phases, mismatched = None, {}, None
    with step_pools():  # Ray replicas (if any) load once for all partitions of the step
        for batch, log in run.partitions():
            frames = select_kept(store.read_batch("frames", batch), store.read_batch("duplicates", batch))
            keys = {
                f: content_key(*model_key, cache.file_digest(store.data_dir / p))
                for f, p in zip(frames["frame_id"], frames["path"])
                if cache and (store.data_dir / p).is_file()
            }
            known = cache.get_many("detections", keys.values()) if cache else {}
            todo = frames[[keys.get(f) not in known for f in frames["frame_id"]]]
            rejected = set()
            prog = Progress(context.log, f"detections[{batch}]", len(frames))
            reused = [
                dict(r, frame_id=f, batch=batch)
                for f in frames["frame_id"]
                if keys.get(f) in known
                for r in known[keys[f]]
            ]
            df = pd.DataFrame(reused, columns=DETECTION_COLUMNS)
            if len(todo):
                model = model or detector.get()
                new, stats = run_detection(
                    todo,
                    store.data_dir,
                    model,
                    lambda f, r, e, d, rejected=rejected, log=log: (rejected.add(f), log.add(f, r, e, d)),
                    opts,
                    prog.step,
                )
                produced = stats.extra.get("setup", setup)
                if produced != setup:  # e.g. auto fell back to the library's predict: not under this key
                    context.log.warning(f"detections: ran as {produced}, configured as {setup}; rows not cached")
                    mismatched = produced
                if cache and produced == setup:
                    cache.put_many(
                        "detections",
                        {
                            keys[f]: new[new["frame_id"] == f].to_dict("records")
                            for f in todo["frame_id"]
                            if f in keys and f not in rejected
                        },
                    )
                df = pd.concat([df, new], ignore_index=True) if len(df) else new
                totals["rejected"] += stats.rejected
                totals["computed"] += len(todo)
                totals["model_s"] += stats.model_seconds
                totals["wall_s"] += stats.wall_seconds
                add_phases(phases, stats.extra.get("phase_seconds", {}))
            run.put(batch, df)
            totals["frames"] += len(frames)
            run.note(batch, frames_in=len(frames))
    if detector.is_random:
        context.log.warning(RANDOM_WARNING)
    md = {
        **_model_md(detector),
        "frames_in": totals["frames"],
        **reuse_metadata(cache),
        "frames_per_s": round(totals["computed"] / totals["wall_s"], 2) if totals["wall_s"] else 0.0,
        "model_seconds": round(totals["model_s"], 3),
        # where the time went: decode / letterbox / network / boxes / rows / waiting (run_detection)
        "phase_seconds": dg.MetadataValue.json(phases),
        # what computes (and keys the reuse of) these rows; setup_ran when it came out otherwise
        "setup": dg.MetadataValue.json(setup),
        **({"setup_ran": dg.MetadataValue.json(mismatched)} if mismatched else {}),
    }
    ran = mismatched or setup  # Ray replicas that resolved unlike setups: {"mixed": [...]}
    if model is not None:
        md.update(
            {
                "device": model.device,
                "half": bool(model.half),
                # what ran the network: tensor / onnx (forge/vision/fast_detect.py) or the library's predict
                "engine": ran.get("engine", "mixed"),
                # where JPEGs were decoded: on the model's device (nvjpeg on CUDA) or in CPU threads
                "decode": {True: "device", False: "cpu"}.get(ran.get("device_decode"), "mixed"),
                "weights_sha256": model.spec.sha256 or "none",
                "load_seconds": round(model.load_seconds, 3),
            }
        )
    return run.publish(md)


@dg.asset(
    group_name="vision",
    partitions_def=batches,
    backfill_policy=SINGLE_RUN,
    kinds={"pillow", "parquet"},
    deps=["detections", "frames"],
    code_version=VERSION,
    check_specs=contract_check_specs("person_indicators", ["person_indicators"]),
    metadata=table_metadata(["person_indicators"]),
    description="VAGUE person indicators: person1..N drawn left to right on an annotated copy of each frame with people.",
)
def person_indicators(context: dg.AssetExecutionContext, config: DecodeConfig, storage: StorageResource):
    run = StageRun(context, storage)
    store = run.store
    for batch, log in run.partitions():
        frames = vision_frames(store, batch)
        det = store.read("detections", parts=[batch])
        out_dir = store.media_dir / "indicators" / batch
        df = run.put(batch, run_indicators(frames, det, store.data_dir, out_dir, log.add, config.options()))
        run.note(
            batch,
            frames_annotated=int(df["frame_id"].nunique()),
            contact_sheet=contact_sheet(indicator_tiles(df, store.data_dir), f"person indicators in {batch}"),
        )
    parts = run.tables["person_indicators"]
    md = {"frames_annotated": int(sum(p["frame_id"].nunique() for p in parts.values()))}
    sample = next((p for p in parts.values() if not p.empty), None)
    if sample is not None:
        md["example"] = dg.MetadataValue.path(str(store.data_dir / sample["annotated_path"].iloc[0]))
    return run.publish(md)


@dg.asset(
    group_name="vision",
    partitions_def=batches,
    backfill_policy=SINGLE_RUN,
    pool="gpu",
    kinds={"pytorch", "parquet"},
    deps=["detections", "frames", "duplicates"],
    code_version=VERSION,  # with the configured detector and tagger: configured_versions()
    check_specs=contract_check_specs("tags", ["tags"]),
    metadata=table_metadata(["tags"]),
    description="Object tags per kept frame: YOLO class names with counts (default) or Recognize-Anything (RAM) tags with scores.",
)
def tags(
    context: dg.AssetExecutionContext,
    config: DecodeConfig,
    storage: StorageResource,
    tagger: TaggerResource,
    detector: DetectorResource,
):
    # RAM runs in the step or, with a `scale` address (scale.stages.tags), on Ray tagging actors
    placement = configured_placement("tags") if tagger.backend == "ram" else None
    run = StageRun(context, storage, rejects=placement is not None)  # tags from detections reject nothing
    store = run.store
    ram = tagger.get_ram() if placement is not None and not placement.enabled else None
    if ram is not None:
        md = {"backend": "ram", "model_version": ram.model_version, "verified_on_real_weights": False}
    elif placement is not None:
        md = {"backend": "ram", "verified_on_real_weights": False, "placement": placement_dict(placement)}
    else:
        md = {"backend": "yolo", **_model_md(detector)}
        version = f"{Path(detector.weights).name}" + ("@random-init" if detector.is_random else "")
    with step_pools():  # Ray replicas (if any) load once for all partitions of the step
        for batch, log in run.partitions():
            if placement is not None:
                if ram is not None:
                    df = run_ram(vision_frames(store, batch), store.data_dir, ram, log.add, config.options())
                else:
                    df, remote_version = ram_on_ray(
                        placement,
                        tagger.ram_kwargs(),
                        vision_frames(store, batch),
                        store.data_dir,
                        log.add,
                        config.options(),
                    )
                    if remote_version:
                        md["model_version"] = remote_version
            else:
                det = store.read("detections", parts=[batch])
                if not det.empty and det["weights_sha256"].notna().any():
                    version = f"{det['model_name'].iloc[0]}@{str(det['weights_sha256'].dropna().iloc[0])[:12]}"
                df = tags_from_detections(det, version) if not det.empty else pd.DataFrame(columns=TAG_COLUMNS)
            run.put(batch, df)
    md |= run.describe(lambda p: {"distinct_tags": int(p["tag"].nunique())})
    return run.publish(md)


@dg.asset(
    group_name="vision",
    partitions_def=batches,
    backfill_policy=SINGLE_RUN,
    kinds={"duckdb", "parquet"},
    deps=["tags", "detections", "frames", "duplicates"],
    code_version=VERSION,  # with the configured rule: configured_versions()
    check_specs=contract_check_specs("rich_scenes", ["rich_scenes"]),
    metadata=table_metadata(["rich_scenes"]),
    description="VAGUE rich-scene ranking: per source, frames by distinct tags then persons; top-N / top fraction with a minimum of persons.",
)
def rich_scenes(context: dg.AssetExecutionContext, config: RichSceneConfig, storage: StorageResource):
    run = StageRun(context, storage, rejects=False)
    store = run.store
    rule = RichSceneRule(config.min_persons, config.min_tags, config.top_n, config.top_fraction)
    for batch, _ in run.partitions():
        frames = vision_frames(store, batch)
        run.put(
            batch,
            rank_rich_scenes(
                frames, store.read("tags", parts=[batch]), count_persons(store.read("detections", parts=[batch])), rule
            ),
        )
    md = {
        "rule": dg.MetadataValue.json(rule.__dict__),
        **run.describe(lambda p: {"selected": int(p["selected"].sum())}),
    }
    if md["selected"] == 0:
        context.log.warning(
            "rich_scenes selected no frame: with random weights persons/tags are empty; see config/vision.yaml"
        )
    return run.publish(md)


@dg.asset(
    group_name="vision",
    partitions_def=batches,
    backfill_policy=SINGLE_RUN,
    kinds={"parquet"},
    deps=["tags", "person_indicators", "rich_scenes", "text_ratio", "clips", "transcripts", "frames", "duplicates"],
    code_version=VERSION,
    check_specs=contract_check_specs("evidence", ["evidence"]),
    metadata=table_metadata(["evidence"]),
    description="Evidence bundle per frame and per clip (tags, persons + labels, OCR text, transcript with its source and status): what recipes read.",
)
def evidence(context: dg.AssetExecutionContext, storage: StorageResource, tagger: TaggerResource):
    run = StageRun(context, storage, rejects=False)
    store = run.store
    for batch, _ in run.partitions():
        clips = store.read_batch("clips", batch) if store.exists("clips") else None
        bundle = build_evidence(
            vision_frames(store, batch),
            store.read("tags", parts=[batch]),
            store.read("person_indicators", parts=[batch]),
            store.read_batch("text_ratio", batch),
            clips,
            store.read("rich_scenes", parts=[batch]),
            tagger.backend,
            transcripts=store.read_batch("transcripts", batch) if store.exists("transcripts") else None,
        )
        run.put(batch, bundle)
    units = run.describe(lambda p: {"units": dg.MetadataValue.json({u: int((p["unit"] == u).sum()) for u in UNITS})})
    return run.publish(units)


UNITS = ("frame", "clip")


def vision_definitions() -> dg.Definitions:
    """The group's definitions, the configured code versions filled in (``configured_versions``)."""
    versions = configured_versions()

    def versioned(spec: dg.AssetSpec) -> dg.AssetSpec:
        version = versions.get(spec.key.to_user_string())
        return spec.replace_attributes(code_version=version) if version else spec

    plain = dg.Definitions(assets=[detections, person_indicators, tags, rich_scenes, evidence])
    with warnings.catch_warnings():  # map_asset_specs is "preview" in Dagster 1.13
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return plain.map_asset_specs(func=versioned)


def __getattr__(name: str) -> dg.Definitions:
    # ``defs`` is built when asked (definitions.py's discovery, a test), so importing this module
    # reads no settings and builds no resource
    if name == "defs":
        return vision_definitions()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
