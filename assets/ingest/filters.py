"""II-Bench filters on the frames table: ``frame_hashes`` → ``duplicates`` → ``text_ratio``.

* ``frame_hashes`` (per batch): pHash + dHash of every frame; undecodable → reject.
* ``duplicates`` (fan-in over all batches): near-duplicate groups across every source,
  frame by frame for images / pool frames and clip by clip (frame-hash sequences) for
  clips; one kept member per group, the others → rejects (``duplicate``, kept twin).
* ``text_ratio`` + ``clip_text_ratio`` (per batch, GPU pool): EasyOCR on the kept frames
  only; union text area / image area, recognised text, pass/fail; text-heavy frames and
  clips → rejects (``text_heavy``).

Logic lives in ``forge.media.{hashing,dedup,ocr}``; these bodies only read, call and publish.
"""

import time
from dataclasses import asdict
from pathlib import Path
from typing import Literal

import dagster as dg
import pandas as pd

from assets.automation import FAN_IN
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
from forge.media.dedup import DUPLICATE_COLUMNS, DedupParams, find_duplicates
from forge.media.hashing import FrameHash, hash_paths
from forge.media.ocr import OCRResult, clip_passes, spread_clip_frames
from forge.media.ocr_reader import resolve_model_dir
from forge.media.sheets import ocr_tiles
from forge.media.text_boxes import measure_kept_frames, text_needed
from forge.media.text_detector import EXACT_ENGINES
from forge.models.dependencies import MissingDependency
from forge.provenance.versioning import content_hash
from forge.scale.ray_pool import configured_placement, step_pools
from forge.storage import UNPARTITIONED, RejectLog, TableStore
from forge.storage.location import location_of
from forge.storage.stage_cache import StageCache, content_key
from resources.ocr import OCRResource
from resources.storage import StorageResource

VERSION = "filters-1"
_MEDIA = Path(__file__).resolve().parents[2] / "forge" / "media"
HASH_COLUMNS = [
    "frame_id",
    "batch",
    "source",
    "item_id",
    "clip_id",
    "kind",
    "frame_index",
    "width",
    "height",
    "phash",
    "dhash",
    "phash_int",
    "dhash_int",
]


# -- frame_hashes -------------------------------------------------------------------------


class HashConfig(dg.Config):
    workers: int = 2  # decode/hash threads (PIL and the DCT release the GIL)
    reuse: bool = True  # reuse the hashes of unchanged image files (False: recompute all)


HASH_VERSION = content_hash(VERSION, files=[_MEDIA / "hashing.py"])
OCR_VERSION = content_hash(VERSION, files=[_MEDIA / "ocr.py"])


def _digests(store: TableStore, frames: pd.DataFrame, cache: StageCache) -> list[str]:
    """Each frame file's SHA-256: read from the file here; on object storage, for a frame another
    node made (not in this machine's work dir), the ``sha256`` its row holds (of the same JPEG
    bytes); "" when neither is known (hashed, not cached)."""
    remote = store.remote is not None
    out = []
    for rel, sha in zip(frames["path"], frames["sha256"] if "sha256" in frames else [None] * len(frames)):
        p = store.data_dir / str(rel)
        if p.is_file():
            out.append(cache.file_digest(p))
        else:
            out.append(str(sha) if remote and isinstance(sha, str) and sha else "")
    return out


def hash_batch(
    store: TableStore,
    batch: str,
    rejects: RejectLog,
    workers: int = 2,
    progress: Progress | None = None,
    cache: StageCache | None = None,
) -> pd.DataFrame:
    frames = store.read("frames", parts=[batch])
    if frames.empty:
        return pd.DataFrame(columns=HASH_COLUMNS)
    frames = frames.sort_values("frame_id").reset_index(drop=True)
    stored = [str(p) for p in frames["path"]]
    # an unchanged image file keeps its hashes (content-addressed; see forge/storage/stage_cache.py)
    digests = _digests(store, frames, cache) if cache else [""] * len(frames)
    keys = [content_key(HASH_VERSION, d) if d else "" for d in digests]
    known = cache.get_many("frame_hashes", [k for k in keys if k]) if cache else {}
    todo = [i for i, k in enumerate(keys) if k not in known]
    # workers are handed the location (a URL on object storage), never this machine's path
    where = location_of(store.data_dir)
    computed = hash_paths(where, [stored[i] for i in todo], workers, progress.step if progress else None)
    if cache:
        cache.put_many(
            "frame_hashes", {keys[i]: asdict(r) for i, r in zip(todo, computed) if keys[i] and isinstance(r, FrameHash)}
        )
        if progress and len(frames) > len(todo):
            progress.step(len(frames) - len(todo))
    by_index = dict(zip(todo, computed))
    results = [by_index[i] if i in by_index else FrameHash(**known[keys[i]]) for i in range(len(frames))]
    rows = []
    for fr, res in zip(frames.itertuples(index=False), results):
        if isinstance(res, FrameHash):
            rows.append(
                {
                    "frame_id": fr.frame_id,
                    "batch": batch,
                    "source": fr.source,
                    "item_id": fr.item_id,
                    "clip_id": fr.clip_id,
                    "kind": fr.kind,
                    "frame_index": int(fr.frame_index),
                    "width": res.width,
                    "height": res.height,
                    "phash": res.phash,
                    "dhash": res.dhash,
                    "phash_int": res.phash_int,
                    "dhash_int": res.dhash_int,
                }
            )
        else:
            rejects.add_exception(fr.frame_id, "decode_error", res, related_id=fr.item_id)
    return pd.DataFrame(rows, columns=HASH_COLUMNS)


@dg.asset(
    group_name="ingest",
    kinds={"python", "numpy"},
    deps=["frames"],
    partitions_def=batches,
    backfill_policy=SINGLE_RUN,
    code_version=content_hash(VERSION, files=[_MEDIA / "hashing.py"]),
    check_specs=contract_check_specs("frame_hashes", ["frame_hashes"]),
    metadata=table_metadata(["frame_hashes"]),
    description="64-bit pHash and dHash (imagehash) of every frame, as hex and as int64 bits for "
    "vectorised Hamming distances. A frame that fails to decode → rejects (decode_error).",
)
def frame_hashes(
    context: dg.AssetExecutionContext, config: HashConfig, storage: StorageResource
) -> dg.MaterializeResult:
    run = StageRun(context, storage)
    store = run.store
    cache = StageCache.for_store(store) if config.reuse else None
    for batch, log in run.partitions():
        n = len(store.read("frames", parts=[batch], columns=["frame_id"])) if store.exists("frames") else 0
        run.put(batch, hash_batch(store, batch, log, config.workers, Progress(context.log, f"hash {batch}", n), cache))
    secs = time.perf_counter() - run.t0
    return run.publish({"frames_per_second": round(len(run.frame()) / max(secs, 1e-9), 1), **reuse_metadata(cache)})


# -- duplicates ---------------------------------------------------------------------------


class DedupConfig(dg.Config):
    threshold: int = 8  # max pHash Hamming distance (of 64 bits)
    dhash_threshold: int | None = None  # max dHash distance; None = threshold
    rule: Literal["both", "either", "phash", "dhash"] = "either"
    clip_min_match: float = 0.6  # share of the shorter clip's frames that must align, in order
    clip_same_item: bool = False  # also compare clips cut from the same video
    source_priority: list[str] = []  # tie-break for the kept copy: earlier sources win

    def params(self) -> DedupParams:
        return DedupParams(
            threshold=self.threshold,
            dhash_threshold=self.dhash_threshold,
            rule=self.rule,
            clip_min_match=self.clip_min_match,
            clip_same_item=self.clip_same_item,
            source_priority=tuple(self.source_priority),
        )


def duplicate_rejects(dups: pd.DataFrame, log: RejectLog | None = None) -> RejectLog:
    """A reject per non-kept frame (→ kept twin) and per duplicate clip (→ kept clip), into ``log``."""
    log = RejectLog("duplicates", UNPARTITIONED) if log is None else log
    gone = dups[~dups["is_kept"].astype(bool)]
    for r in gone.itertuples(index=False):
        log.add(
            r.frame_id,
            "duplicate",
            detail=f"{r.method} near-duplicate of {r.kept_frame_id} "
            f"(pHash distance {r.distance}, dHash {r.dhash_distance})",
            related_id=r.kept_frame_id,
        )
    clips = gone[gone["method"] == "clip"].drop_duplicates("clip_id")
    for r in clips.itertuples(index=False):
        log.add(
            r.clip_id,
            "duplicate",
            detail=f"clip's frame-hash sequence matches kept clip {r.kept_clip_id}",
            related_id=r.kept_clip_id,
        )
    return log


def dedup_summary(dups: pd.DataFrame) -> dict[str, float | int]:
    n = len(dups)
    groups = dups.groupby(["method", "group_id"]).size() if n else pd.Series(dtype=int)
    return {
        "frames": n,
        "groups": int(len(groups)),
        "groups_with_duplicates": int((groups > 1).sum()) if n else 0,
        "duplicate_frames": int((~dups["is_kept"].astype(bool)).sum()) if n else 0,
        "duplicate_rate": round(float((~dups["is_kept"].astype(bool)).mean()), 4) if n else 0.0,
        "duplicate_clips": int(
            dups.loc[~dups["is_kept"].astype(bool) & (dups["method"] == "clip"), "clip_id"].nunique()
        )
        if n
        else 0,
    }


@dg.asset(
    group_name="ingest",
    kinds={"python", "numpy"},
    deps=["frame_hashes"],
    automation_condition=FAN_IN,
    code_version=content_hash(VERSION, files=[_MEDIA / "dedup.py", _MEDIA / "hashing.py"]),
    check_specs=contract_check_specs("duplicates", ["duplicates"]),
    metadata=table_metadata(["duplicates"]),
    description="II-Bench stage 1: near-duplicate groups over every hashed frame of every batch "
    "(multi-index Hamming search + union-find), images frame by frame and clips by frame-hash "
    "sequence; one kept per group (most pixels, then source priority, then id), the rest → "
    "rejects (duplicate, related_id = kept twin).",
)
def duplicates(
    context: dg.AssetExecutionContext, config: DedupConfig, storage: StorageResource
) -> dg.MaterializeResult:
    run = StageRun(context, storage)
    part, log = run.only()
    hashes = run.store.read("frame_hashes")
    t0 = time.perf_counter()
    dups = find_duplicates(hashes, config.params()) if not hashes.empty else pd.DataFrame(columns=DUPLICATE_COLUMNS)
    grouping_s = time.perf_counter() - t0
    summary = dedup_summary(dups)
    context.log.info(f"dedup: {summary} in {grouping_s:.2f}s")
    duplicate_rejects(dups, log)
    run.put(part, dups)
    return run.publish(
        {
            **summary,
            "grouping_seconds": round(grouping_s, 3),
            "rule": f"{config.rule} (pHash<={config.threshold}, dHash<="
            f"{config.threshold if config.dhash_threshold is None else config.dhash_threshold})",
        },
    )


def group_problems(dups: pd.DataFrame) -> list[str]:
    """Ways a duplicates table breaks its own invariants (empty list when well formed)."""
    problems: list[str] = []
    if len(dups):
        kept = dups["is_kept"].astype(bool)
        # one kept member per group: a frame for frame groups, a clip (all its frames) for clip groups
        member = dups["frame_id"].where(dups["method"] == "frame", dups["clip_id"])
        per_group = member[kept].groupby([dups.loc[kept, "method"], dups.loc[kept, "group_id"]]).nunique()
        all_groups = dups.groupby(["method", "group_id"]).size()
        bad = all_groups.index.difference(per_group[per_group == 1].index)
        if len(bad):
            problems.append(f"{len(bad)} group(s) without exactly one kept member, e.g. {list(bad[:3])}")
        kept_ids = set(dups.loc[kept, "frame_id"])
        dangling = dups.loc[~kept & ~dups["kept_frame_id"].isin(kept_ids), "frame_id"]
        if len(dangling):
            problems.append(
                f"{len(dangling)} duplicate(s) point at a frame that is not kept, e.g. {list(dangling[:3])}"
            )
        self_ref = dups.loc[kept & (dups["kept_frame_id"] != dups["frame_id"]), "frame_id"]
        if len(self_ref):
            problems.append(f"{len(self_ref)} kept frame(s) whose kept_frame_id is another frame")
    return problems


@dg.asset_check(
    asset="duplicates",
    blocking=False,
    description="Groups are well formed (exactly one kept member, every twin points at a kept "
    "frame); reports group count and duplicate rate.",
)
def duplicates_groups(storage: StorageResource) -> dg.AssetCheckResult:
    dups = storage.store.read("duplicates")
    problems = group_problems(dups)
    return dg.AssetCheckResult(
        passed=not problems,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            **dedup_summary(dups),
            "problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none"),
        },
    )


# -- text_ratio -----------------------------------------------------------------------------


class TextRatioConfig(dg.Config):
    max_ratio: float = 0.3  # a frame passes when text covers at most this share of it
    clip_rule: Literal["any", "all", "mean"] = "mean"  # how a clip's frame ratios decide the clip
    clip_frames: int = 4  # OCR at most this many evenly spaced frames per clip (0 = all 32)
    # "detect": ratio from EasyOCR's detector alone, batched (forge.media.text_boxes); "readtext":
    # detector + recogniser on every frame, one at a time. Same ratios (docs/filters.md).
    method: Literal["detect", "readtext"] = "detect"
    # With method=detect, which frames are also recognised: "needed" = the ones whose text can
    # reach evidence (stills that pass, every sampled clip frame); "all"; "none" (text stays "").
    recognise: Literal["needed", "all", "none"] = "needed"
    detect_batch: int = 8  # frames of one size per detector forward pass
    reuse: bool = True  # reuse the OCR of unchanged images read with the same settings and weights


TEXT_COLUMNS = [
    "frame_id",
    "batch",
    "source",
    "item_id",
    "clip_id",
    "kind",
    "ratio",
    "n_boxes",
    "text",
    "boxes",
    "max_ratio",
    "passes",
    "clip_passes",
    "width",
    "height",
]
CLIP_COLUMNS = [
    "clip_id",
    "batch",
    "source",
    "item_id",
    "n_frames",
    "mean_ratio",
    "max_frame_ratio",
    "frames_passing",
    "rule",
    "max_ratio",
    "passes",
]


def kept_frames(store: TableStore, batch: str) -> pd.DataFrame:
    """Frames of ``batch`` that dedup kept (frames never hashed or deduplicated are skipped)."""
    frames = store.read("frames", parts=[batch])
    if frames.empty or not store.exists("duplicates"):
        return frames.iloc[0:0]
    kept = store.read("duplicates", where="batch = ? and is_kept", columns=["frame_id"], params=[batch])
    return frames[frames["frame_id"].isin(set(kept["frame_id"]))].sort_values("frame_id").reset_index(drop=True)


def ocr_runs_on_cuda(ocr: OCRResource, method: str) -> bool:
    """Whether this stage's OCR will run on a GPU: the Ray replicas when they are given GPUs
    (detect path), else this process when the resource asks for one and torch sees one."""
    placement = configured_placement("text_ratio")
    if method == "detect" and placement.enabled:
        return placement.num_gpus > 0
    import torch

    return bool(ocr.use_gpu()) and torch.cuda.is_available()


def ocr_cache_parts(ocr: OCRResource, method: str, weights_digest: str) -> list:
    """What an OCR result's cache key is made of (plus the frame's bytes). The exact detector
    engines (torch, onnx, auto) give the same boxes and share entries; ``onnx-int8`` does not
    (its boxes may differ slightly), so its results never serve the others, nor theirs it.
    Results computed on a GPU (cuDNN convolutions, TF32 by default: not shown equal to the
    CPU's) are kept apart from the CPU's too; CPU keys are unchanged by that."""
    parts = [OCR_VERSION, list(ocr.languages), ocr.max_side, method, weights_digest]
    engine = getattr(ocr, "detector_engine", "auto")
    if method == "detect" and engine not in (*EXACT_ENGINES, "auto"):
        parts.append(engine)
    if hasattr(ocr, "use_gpu") and ocr_runs_on_cuda(ocr, method):
        parts.append("cuda")
    return parts


def text_ratio_batch(
    store: TableStore,
    batch: str,
    ocr: OCRResource,
    max_ratio: float,
    clip_rule: str,
    rejects: RejectLog,
    progress: Progress | None = None,
    clip_frames: int = 0,
    method: str = "readtext",
    recognise: str = "needed",
    detect_batch: int = 8,
    cache: StageCache | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    frames = spread_clip_frames(kept_frames(store, batch), clip_frames)
    # OCR of an unchanged image with the same reader settings and weights is reused; the
    # threshold is applied below, so changing it re-reads nothing
    reader = ocr_cache_parts(ocr, method, cache.tree_digest(ocr.model_dir) if cache and ocr.model_dir else "")
    rows = []
    # A cached result serves when its text was recognised or the frame does not need text now.
    wants = text_needed(recognise, max_ratio) if method == "detect" else (lambda kind, res: True)
    keys: dict[str, str] = {}
    known: dict[str, OCRResult] = {}
    for fr in frames.itertuples(index=False) if cache else ():
        path = store.data_dir / fr.path
        if path.is_file():
            keys[fr.frame_id] = content_key(*reader, cache.file_digest(path))
            hit = cache.get("ocr", keys[fr.frame_id])
            if hit and (hit.get("recognised") or not (wants and wants(fr.kind, OCRResult(**hit["result"])))):
                known[fr.frame_id] = OCRResult(**hit["result"])
    todo = frames[~frames["frame_id"].isin(set(known))] if len(frames) else frames
    if len(todo) and hasattr(ocr, "reader"):  # once, up front: missing weights fail the step, not every frame
        try:
            if method != "detect":
                ocr.reader()
            elif configured_placement("text_ratio").enabled:
                resolve_model_dir(ocr.model_dir)  # the Ray replicas build the readers: weights check only
            else:
                ocr.detect_reader()
        except Exception as exc:
            raise MissingDependency(
                f"EasyOCR could not load its weights (model_dir {getattr(ocr, 'model_dir', '')!r}): "
                f"{type(exc).__name__}: {exc} — set SUBTEXT_MODELS_DIR to a folder holding "
                "easyocr/ (see docs/filters.md)"
            ) from exc
    measured = {
        fr.frame_id: (res, exc)
        for fr, res, exc in (
            measure_kept_frames(ocr, todo, store.data_dir, max_ratio, method, recognise, detect_batch)
            if len(todo)
            else ()
        )
    }
    for fr in frames.itertuples(index=False):
        if progress:
            progress.step()
        res, exc = (known[fr.frame_id], None) if fr.frame_id in known else measured[fr.frame_id]
        if exc is None and cache and fr.frame_id in keys and fr.frame_id not in known:
            cache.put(
                "ocr", keys[fr.frame_id], {"result": asdict(res), "recognised": bool(wants and wants(fr.kind, res))}
            )
        if exc is not None:  # one unreadable frame is a reject, not a failed run
            rejects.add_exception(fr.frame_id, "ocr_error", exc, related_id=fr.item_id)
            continue
        rows.append(
            {
                "frame_id": fr.frame_id,
                "batch": batch,
                "source": fr.source,
                "item_id": fr.item_id,
                "clip_id": fr.clip_id,
                "kind": fr.kind,
                "ratio": res.ratio,
                "n_boxes": res.n_boxes,
                "text": res.text,
                "boxes": res.boxes_json(),
                "max_ratio": max_ratio,
                "passes": res.ratio <= max_ratio,
                "clip_passes": None,
                "width": res.width,
                "height": res.height,
            }
        )
    df = pd.DataFrame(rows, columns=TEXT_COLUMNS)
    clips_rows = []
    in_clip = df[(df["kind"] == "clip_frame") & df["clip_id"].notna()]
    for clip_id, g in in_clip.groupby("clip_id", sort=True):
        ok = clip_passes(g["ratio"].tolist(), max_ratio, clip_rule)  # type: ignore[arg-type]
        clips_rows.append(
            {
                "clip_id": clip_id,
                "batch": batch,
                "source": g["source"].iat[0],
                "item_id": g["item_id"].iat[0],
                "n_frames": len(g),
                "mean_ratio": float(g["ratio"].mean()),
                "max_frame_ratio": float(g["ratio"].max()),
                "frames_passing": int(g["passes"].sum()),
                "rule": clip_rule,
                "max_ratio": max_ratio,
                "passes": ok,
            }
        )
        df.loc[g.index, "clip_passes"] = ok
        if not ok:
            rejects.add(
                clip_id,
                "text_heavy",
                detail=f"clip rule {clip_rule}: mean text ratio "
                f"{g['ratio'].mean():.3f}, max {g['ratio'].max():.3f} > {max_ratio}",
            )
    for r in df[(df["kind"] != "clip_frame") & ~df["passes"].astype(bool)].itertuples(index=False):
        rejects.add(
            r.frame_id,
            "text_heavy",
            detail=f"text covers {r.ratio:.1%} of the frame (> {max_ratio:.0%})",
            related_id=r.item_id,
        )
    return df, pd.DataFrame(clips_rows, columns=CLIP_COLUMNS)


@dg.asset(
    group_name="ingest",
    kinds={"python", "pytorch"},
    deps=["frames", "duplicates"],
    partitions_def=batches,
    backfill_policy=SINGLE_RUN,
    pool="gpu",
    code_version=content_hash(
        VERSION, files=[_MEDIA / "ocr.py", _MEDIA / "text_boxes.py", _MEDIA / "text_detector.py"]
    ),
    check_specs=contract_check_specs("text_ratio", ["text_ratio", "clip_text_ratio"]),
    metadata=table_metadata(["text_ratio", "clip_text_ratio"]),
    description="II-Bench stage 2: EasyOCR on the frames dedup kept; text-area ratio = union of the "
    "text polygons / image area, recognised text, pass/fail against max_ratio; clips judged by an "
    "any/all/mean rule (clip_text_ratio). Text-heavy frames and clips → rejects (text_heavy).",
)
def text_ratio(
    context: dg.AssetExecutionContext, config: TextRatioConfig, storage: StorageResource, ocr: OCRResource
) -> dg.MaterializeResult:
    run = StageRun(context, storage, tables=["text_ratio", "clip_text_ratio"])
    store = run.store
    cache = StageCache.for_store(store) if config.reuse else None
    with step_pools():  # Ray replicas (if any) load once for all partitions of the step
        for batch, log in run.partitions():
            n = len(spread_clip_frames(kept_frames(store, batch), config.clip_frames))
            frames, clips = text_ratio_batch(
                store,
                batch,
                ocr,
                config.max_ratio,
                config.clip_rule,
                log,
                Progress(context.log, f"ocr {batch}", n),
                clip_frames=config.clip_frames,
                method=config.method,
                recognise=config.recognise,
                detect_batch=config.detect_batch,
                cache=cache,
            )
            run.put(batch, frames)
            run.put(batch, clips, "clip_text_ratio")
    total = len(run.frame())
    passing = int(run.frame()["passes"].astype(bool).sum())
    secs = time.perf_counter() - run.t0
    for b, p in run.tables["text_ratio"].items():  # after the timing, as the pictures are not the OCR's
        run.note(b, **text_ratio_partition_md(store, b, p))
    return run.publish(
        {
            "frames_passing": passing,
            "frames_text_heavy": total - passing,
            "images_per_second": round(total / max(secs, 1e-9), 2),
            "gpu": ocr.use_gpu(),
            # what ran the text detector (forge/media/text_detector.py); readtext = the library's reader
            "detector_engine": (ocr.detector_engine_used() or "none (nothing measured)")
            if config.method == "detect"
            else "readtext",
            # int8's graph is derived here (calibration): its digest tells two machines' runs apart
            **(
                {"detector_model_sha256": ocr.detector_graph_sha256() or ""}
                if "onnx-int8" in (ocr.detector_engine_used() or "")
                else {}
            ),
            **reuse_metadata(cache),
        }
    )


def text_ratio_partition_md(store: TableStore, batch: str, df: pd.DataFrame) -> dict:
    """One batch's pass/fail counts and its frames with the OCR boxes drawn."""
    passing = int(df["passes"].astype(bool).sum())
    frames = store.read("frames", parts=[batch], columns=["frame_id", "path"]) if len(df) else pd.DataFrame()
    return {
        "frames_passing": passing,
        "frames_text_heavy": len(df) - passing,
        "contact_sheet": contact_sheet(ocr_tiles(df, frames, store.data_dir), f"OCR boxes in {batch}"),
    }


defs = dg.Definitions(assets=[frame_hashes, duplicates, text_ratio], asset_checks=[duplicates_groups])
