"""``review_sensor``: polls Label Studio and materializes ``<benchmark>_verdicts`` (and the human
baseline's ``<benchmark>_human_eval``) when reviewers changed something (docs/review.md).

Each tick, for every benchmark with live tasks (table ``review_tasks``): a fingerprint of its
projects (task and annotation counts, each task's last change) is compared with the cursor; a
change gives one run of ``<benchmark>_verdicts`` (and ``<benchmark>_export`` after it when the
benchmark's review settings say ``export_after_review``) (run key ``review:<benchmark>:<fingerprint>``: a repeated tick never
launches it twice, and the verdicts asset replaces rows, so nothing is duplicated). Label Studio
down: the tick is skipped with a message naming ``make review``; nothing is lost, the next tick
catches up.
"""

from __future__ import annotations

import json

import dagster as dg

from forge.benchmarks import registry
from forge.provenance.versioning import content_hash
from forge.review import sync
from forge.review.client import ReviewServerDown
from forge.review.config import review_spec
from resources.review import ReviewResource
from resources.storage import StorageResource


def targets(name: str, kinds: set[str], export: bool = False) -> list[dg.AssetKey]:
    """What one run materializes: the verdicts (then, with ``export_after_review``, the export,
    which depends on them), the human baseline's scores."""
    keys = [dg.AssetKey(f"{name}_verdicts")] if kinds & {"review", "adjudication"} else []
    keys += [dg.AssetKey(f"{name}_export")] if keys and export else []
    return keys + ([dg.AssetKey(f"{name}_human_eval")] if "human" in kinds else [])


def tick(context: dg.SensorEvaluationContext, storage: StorageResource, review: ReviewResource) -> dg.SensorResult:
    store = storage.store
    seen: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
    if not store.exists("review_tasks"):
        return dg.SensorResult(skip_reason=dg.SkipReason("no review tasks pushed yet"), cursor=context.cursor)
    tasks = store.read("review_tasks")
    ls = review.client(store.data_dir)
    runs, now = [], dict(seen)
    try:
        for name in registry.names():
            mine = tasks[tasks["benchmark"] == name]
            if mine.empty:
                continue
            fp = content_hash(sync.fingerprint(ls, mine), length=16)
            now[name] = fp
            if seen.get(name) != fp:
                export = review_spec(name, registry.get(name).review).export_after_review
                keys = targets(name, set(mine["kind"]), export)
                runs.append(dg.RunRequest(run_key=f"review:{name}:{fp}", asset_selection=keys))
    except ReviewServerDown as exc:
        return dg.SensorResult(skip_reason=dg.SkipReason(str(exc)), cursor=context.cursor)
    cursor = json.dumps(now, sort_keys=True)
    if not runs:
        return dg.SensorResult(skip_reason=dg.SkipReason("no new or changed verdicts"), cursor=cursor)
    return dg.SensorResult(run_requests=runs, cursor=cursor)


@dg.sensor(
    name="review_sensor",
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    target=dg.AssetSelection.assets(*[k for n in registry.names() for k in targets(n, {"review", "human"}, True)]),
    description="Polls Label Studio (make review) and materializes <benchmark>_verdicts / <benchmark>_human_eval "
    "when reviewers submitted, changed or deleted something.",
)
def review_sensor(
    context: dg.SensorEvaluationContext, storage: StorageResource, review: ReviewResource
) -> dg.SensorResult:
    return tick(context, storage, review)


defs = dg.Definitions(sensors=[review_sensor])
