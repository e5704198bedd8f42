"""``protocol_sensor``: keeps the papers' human steps moving (docs/review.md, "Protocol steps").

Each tick, for every declared step (``BenchmarkSpec.human_steps``) it compares a fingerprint with
the cursor: the corrected stage's latest materialization (new units to push) and the step's Label
Studio project (its counts and every task's ``updated_at``: an annotation added, changed or
removed). Every step that changed goes into ONE run: ``<b>_<step>_tasks`` then
``<b>_<step>_results``. The same state is never requested twice; Label Studio down: the tick is
skipped with a message naming ``make review``, and the next one catches up. Off by default: turn
it on in the UI (Automation) once ``make review`` runs.
"""

from __future__ import annotations

import json
from typing import Any

import dagster as dg

from forge.benchmarks import registry
from forge.labelstudio.client import LabelStudio, ReviewServerDown
from forge.protocol import steps
from forge.provenance.versioning import content_hash
from resources.review import ReviewResource
from resources.storage import StorageResource

KEYS = ("task_number", "total_annotations_number", "num_tasks_with_annotations")


def all_steps() -> list[tuple[Any, Any]]:
    return [(spec, step) for spec in registry.specs() for step in spec.human_steps]


def targets(spec: Any, step: Any) -> list[dg.AssetKey]:
    return [dg.AssetKey(spec.asset(f"{step.name}_tasks")), dg.AssetKey(spec.asset(f"{step.name}_results"))]


def fingerprint(instance: dg.DagsterInstance, ls: LabelStudio, spec: Any, step: Any) -> str | None:
    """None while the corrected stage has never been materialized (nothing to push)."""
    stage = instance.get_latest_materialization_event(dg.AssetKey(step.corrects))
    if stage is None:
        return None
    project = ls.project_by_title(steps.title(spec, step))
    parts = [f"stage@{stage.timestamp}"]
    if project is not None:
        pid = int(project["id"])
        parts.append(",".join(str(project.get(k)) for k in KEYS))
        parts.append(",".join(f"{t['id']}/{t.get('updated_at')}" for t in ls.tasks(pid)))
    return content_hash("|".join(parts), length=16)


def tick(context: dg.SensorEvaluationContext, storage: StorageResource, review: ReviewResource) -> dg.SensorResult:
    store = storage.store
    cur = json.loads(context.cursor) if context.cursor else {}
    try:
        ls = review.client(store.data_dir)
        ls.ensure_up()
        now = {f"{spec.name}/{step.name}": fingerprint(context.instance, ls, spec, step) for spec, step in all_steps()}
    except ReviewServerDown as exc:
        return dg.SensorResult(skip_reason=dg.SkipReason(str(exc)), cursor=context.cursor)
    due = sorted(k for k, fp in now.items() if fp is not None and cur.get(k) != fp)
    if not due:
        return dg.SensorResult(skip_reason=dg.SkipReason("no step changed"), cursor=context.cursor)
    keys = [k for spec, step in all_steps() if f"{spec.name}/{step.name}" in due for k in targets(spec, step)]
    state = content_hash(json.dumps({k: now[k] for k in due}, sort_keys=True), length=16)
    req = dg.RunRequest(
        run_key=f"protocol:{state}", asset_selection=keys, tags={"subtext/protocol_steps": ",".join(due)}
    )
    return dg.SensorResult(run_requests=[req], cursor=json.dumps({**cur, **{k: now[k] for k in due}}, sort_keys=True))


@dg.sensor(
    name="protocol_sensor",
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.STOPPED,
    target=dg.AssetSelection.assets(*[k for spec, step in all_steps() for k in targets(spec, step)]),
    description="Pushes new units of each paper's human steps to Label Studio and reads people's answers back "
    "(<benchmark>_<step>_tasks, then <benchmark>_<step>_results), one run per tick for the steps that changed.",
)
def protocol_sensor(
    context: dg.SensorEvaluationContext, storage: StorageResource, review: ReviewResource
) -> dg.SensorResult:
    return tick(context, storage, review)


defs = dg.Definitions(sensors=[protocol_sensor])
