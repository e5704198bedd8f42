"""One job per stage group, derived from the asset graph so a new stage gets its job for free.

A Dagster job has one partitions definition, so a group whose assets mix partitioned
(per batch / per model) and unpartitioned (fan-in) assets gets two jobs:
``<group>_job`` for the partitioned part (what a backfill targets) and
``<group>_fanin_job`` for the rest. The whole DAG across partitionings is built by
``python -m cli.build`` (or "Materialize all" in the UI, which launches a backfill).

``batch_pipeline_job`` spans groups: every per-batch asset, so one run (or one backfill)
carries a batch from download to its benchmark items; the inbox sensor launches it for
newly registered batches.
"""

from __future__ import annotations

from collections import defaultdict

import dagster as dg

from assets.common import batches

BATCH_PIPELINE_JOB = "batch_pipeline_job"


def stage_jobs(graph) -> list[dg.UnresolvedAssetJobDefinition]:
    by_group: dict[str, dict[object, list[dg.AssetKey]]] = defaultdict(lambda: defaultdict(list))
    pdefs: dict[object, dg.PartitionsDefinition | None] = {}
    for key in graph.materializable_asset_keys:
        node = graph.get(key)
        pid = None if node.partitions_def is None else repr(node.partitions_def)
        pdefs[pid] = node.partitions_def
        by_group[node.group_name][pid].append(key)
    jobs = []
    for group, parts in sorted(by_group.items()):
        partitioned = [p for p in parts if p is not None]
        for pid, keys in sorted(parts.items(), key=lambda kv: (kv[0] is None, str(kv[0]))):
            if pid is None and partitioned:
                name = f"{group}_fanin_job"
            elif pid is not None and len(partitioned) > 1:
                name = f"{group}_{pdefs[pid].name if hasattr(pdefs[pid], 'name') else 'partitioned'}_job"
            else:
                name = f"{group}_job"
            jobs.append(
                dg.define_asset_job(
                    name,
                    selection=dg.AssetSelection.assets(*sorted(keys, key=lambda k: k.to_user_string())),
                    description=f"Stage group `{group}`: {', '.join(sorted(k.to_user_string() for k in keys))}",
                )
            )
    batch_keys = [k for k in graph.materializable_asset_keys if graph.get(k).partitions_def == batches]
    if batch_keys:
        jobs.append(
            dg.define_asset_job(
                BATCH_PIPELINE_JOB,
                selection=dg.AssetSelection.assets(*sorted(batch_keys, key=lambda k: k.to_user_string())),
                description="Every per-batch stage across groups (download → clips → frames → vision → "
                "recipes) for the selected batch partitions.",
            )
        )
    return jobs
