"""The RAM tagging stage's Ray worker: one Recognize-Anything replica per actor of
``forge.scale.ray_pool``, declaring the placement's CPUs/GPUs (``scale`` / ``scale.stages.tags``)."""

from __future__ import annotations

from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from forge.scale.ray_pool import RayPlacement, actor_pool, keep_to_declared_cpus, map_shards
from forge.storage.location import location_of
from forge.storage.objects import localize


class TaggingWorker:
    """One Recognize-Anything (RAM/RAM++) replica; ``run`` = forge.vision.pipeline.run_ram on a shard."""

    def __init__(self, tagger_kwargs: dict) -> None:
        keep_to_declared_cpus()
        from forge.vision.tagger import RamTagger

        self.tagger = RamTagger(**tagger_kwargs)

    def run(self, frames: pd.DataFrame, data_dir: str, opts: dict) -> tuple[pd.DataFrame, list, str]:
        from forge.vision.pipeline import DecodeOptions, run_ram

        rejects: list[tuple] = []
        root = localize(data_dir, list(frames["path"]))  # on object storage: fetched into this node's work dir
        df = run_ram(frames, root, self.tagger, lambda *a: rejects.append(a), DecodeOptions(**opts))
        return df, rejects, self.tagger.model_version


def ram_on_ray(
    placement: RayPlacement, tagger_kwargs: dict, frames: pd.DataFrame, data_dir: Path, reject: Any, opts: Any
) -> tuple[pd.DataFrame, str | None]:
    """RAM tags of ``frames`` (rows in frame order, as ``run_ram`` writes them) from tagging
    actors, and the replicas' model version (None when there was nothing to tag). On a placement
    with GPUs the replicas' ``device: auto`` picks the GPU Ray gave them (fp16 there)."""
    from forge.vision.tagger import TAG_COLUMNS

    if frames.empty:
        return pd.DataFrame(columns=TAG_COLUMNS), None
    parts, version = [], None
    with actor_pool(placement, partial(TaggingWorker, tagger_kwargs)) as pool:
        for df, rejects, v in map_shards(
            pool,
            frames.reset_index(drop=True),
            placement.shard_frames,
            location_of(data_dir),  # a URL on object storage: each actor fetches its frames itself
            asdict(opts),
        ):
            parts.append(df)
            version = v
            for r in rejects:
                reject(*r)
    non_empty = [p for p in parts if not p.empty]
    return (pd.concat(non_empty, ignore_index=True) if non_empty else pd.DataFrame(columns=TAG_COLUMNS)), version
