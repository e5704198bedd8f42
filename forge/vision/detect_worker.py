"""The detection stage's Ray worker: one YOLO replica per actor of ``forge.scale.ray_pool``.

``RemoteDetector`` is what ``DetectorResource.get()`` returns when detection runs on Ray; the
pool it starts builds a ``DetectionWorker`` in each actor, which declares the placement's
CPUs/GPUs (``scale`` / the ``detector`` resource) and runs ``run_detection`` on shards.
"""

from __future__ import annotations

from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from forge.scale.ray_pool import RayPlacement, actor_pool, keep_to_declared_cpus, map_shards
from forge.storage.location import location_of
from forge.storage.objects import localize


class DetectionWorker:
    """One YOLO replica; ``run`` = forge.vision.pipeline.run_detection on a shard."""

    def __init__(self, detector_kwargs: dict, engine: str, device_decode: bool | None = None) -> None:
        keep_to_declared_cpus()
        from forge.vision.detector import YoloDetector
        from forge.vision.fast_detect import with_engine

        self.det = with_engine(YoloDetector(**detector_kwargs), engine, device_decode)

    def run(self, frames: pd.DataFrame, data_dir: str, opts: dict) -> tuple[pd.DataFrame, list, dict]:
        from forge.vision.pipeline import DecodeOptions, run_detection

        rejects: list[tuple] = []
        root = localize(data_dir, list(frames["path"]))  # on object storage: fetched into this node's work dir
        df, stats = run_detection(frames, root, self.det, lambda *a: rejects.append(a), DecodeOptions(**opts))
        return (
            df,
            rejects,
            {
                "processed": stats.processed,
                "rejected": stats.rejected,
                "model_s": stats.model_seconds,
                "phases": stats.extra.get("phase_seconds", {}),
                "setup": stats.extra.get("setup", {}),
            },
        )


class RemoteDetector:
    """What ``DetectorResource.get()`` returns when detection runs on Ray: same attributes the
    asset reports (spec, device, half, ...), the model itself lives in the actors."""

    def __init__(
        self, detector_kwargs: dict, engine: str, placement: RayPlacement, device_decode: bool | None = None
    ) -> None:
        from forge.vision.detector import resolve_weights

        self.kwargs, self.engine, self.placement = detector_kwargs, engine, placement
        self.device_decode = device_decode
        self.spec = resolve_weights(detector_kwargs["weights"], detector_kwargs.get("allow_download", False))
        self.device = f"ray[{placement.actors}x cpu={placement.num_cpus} gpu={placement.num_gpus}]"
        self.half = (
            bool(detector_kwargs.get("half")) if detector_kwargs.get("half") is not None else placement.num_gpus > 0
        )
        self.batch_size = int(detector_kwargs.get("batch_size") or 1)
        self.imgsz = int(detector_kwargs.get("imgsz", 640))
        self.load_seconds = 0.0

    def run_remote(self, frames: pd.DataFrame, data_dir: Path, reject, opts, progress=None):
        import time

        from forge.vision.pipeline import StageStats, add_phases

        t0 = time.perf_counter()
        stats = StageStats(frames=len(frames))
        parts = []
        if frames.empty:
            results = []
        else:
            factory = partial(DetectionWorker, self.kwargs, self.engine, self.device_decode)
            with actor_pool(self.placement, factory) as pool:
                results = map_shards(
                    pool,
                    frames.reset_index(drop=True),
                    self.placement.shard_frames,
                    location_of(data_dir),
                    asdict(opts),
                )
        setups: dict[str, Any] = {}  # replicas on unlike nodes could resolve unlike setups
        for df, rejects, st in results:
            parts.append(df)
            for r in rejects:
                reject(*r)
            stats.processed += st["processed"]
            stats.rejected += st["rejected"]
            stats.model_seconds += st["model_s"]
            add_phases(stats.extra.setdefault("phase_seconds", {}), st.get("phases", {}))  # summed over replicas
            setups.setdefault(repr(st.get("setup")), st.get("setup"))
        if setups:
            stats.extra["setup"] = next(iter(setups.values())) if len(setups) == 1 else {"mixed": list(setups.values())}
        if progress:
            progress(len(frames))
        stats.wall_seconds = time.perf_counter() - t0
        from forge.vision.detector import DETECTION_COLUMNS

        non_empty = [p for p in parts if not p.empty]
        out = pd.concat(non_empty, ignore_index=True) if non_empty else pd.DataFrame(columns=DETECTION_COLUMNS)
        return out, stats
