"""``protocol_sensor``: keeps the papers' human steps moving (docs/review.md, "Protocol steps").

Each tick, for every declared step (``BenchmarkSpec.human_steps``) and every judge validation
(benchmarks with an LLM judge) it compares a fingerprint with the cursor: the upstream asset's
latest materialization (the corrected stage, or ``<b>_eval``: new units to push) and the Label
Studio project (its counts and every task's ``updated_at``: an annotation added, changed or
removed). Everything that changed goes into ONE run: ``<b>_<step>_tasks`` then
``<b>_<step>_results``, ``<b>_judge_tasks`` then ``<b>_judge_validation``. The same state is never requested twice; Label Studio down: the tick is
skipped with a message naming ``make review``, and the next one catches up. Off by default: turn
it on in the UI (Automation) once ``make review`` runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import dagster as dg

from forge.benchmarks import registry
from forge.evals import judge_validation as jv
from forge.labelstudio.client import LabelStudio, ReviewServerDown
from forge.protocol import steps
from forge.provenance.versioning import content_hash
from resources.review import ReviewResource
from resources.storage import StorageResource

KEYS = ("task_number", "total_annotations_number", "num_tasks_with_annotations")


@dataclass(frozen=True)
class Watched:
    """One people's task the sensor keeps moving: the asset whose new materialization brings new
    units, the Label Studio project people answer in, and the two assets that push and read it."""

    key: str  # "<benchmark>/<step>", "<benchmark>/judge_validation"
    upstream: dg.AssetKey
    title: str
    targets: tuple[dg.AssetKey, dg.AssetKey]


def all_steps() -> list[tuple[Any, Any]]:
    return [(spec, step) for spec in registry.specs() for step in spec.human_steps]


def watched() -> list[Watched]:
    """Every paper's human steps, then the judge validation of every benchmark with an LLM judge
    (its new units come with a new ``<b>_eval``)."""
    out = [
        Watched(
            f"{spec.name}/{step.name}",
            dg.AssetKey(step.corrects),
            steps.title(spec, step),
            (dg.AssetKey(spec.asset(f"{step.name}_tasks")), dg.AssetKey(spec.asset(f"{step.name}_results"))),
        )
        for spec, step in all_steps()
    ]
    out += [
        Watched(
            f"{spec.name}/judge_validation",
            dg.AssetKey(spec.asset("eval")),
            jv.title(spec),
            (dg.AssetKey(spec.asset("judge_tasks")), dg.AssetKey(spec.asset("judge_validation"))),
        )
        for spec in registry.specs()
        if spec.eval.judge_prompt
    ]
    return out


def fingerprint(instance: dg.DagsterInstance, ls: LabelStudio, w: Watched) -> str | None:
    """None while the upstream asset has never been materialized (nothing to push)."""
    stage = instance.get_latest_materialization_event(w.upstream)
    if stage is None:
        return None
    project = ls.project_by_title(w.title)
    parts = [f"stage@{stage.timestamp}"]
    if project is not None:
        pid = int(project["id"])
        parts.append(",".join(str(project.get(k)) for k in KEYS))
        parts.append(",".join(f"{t['id']}/{t.get('updated_at')}" for t in ls.tasks(pid)))
    return content_hash("|".join(parts), length=16)


def tick(context: dg.SensorEvaluationContext, storage: StorageResource, review: ReviewResource) -> dg.SensorResult:
    store = storage.store
    cur = json.loads(context.cursor) if context.cursor else {}
    tasks = watched()
    try:
        ls = review.client(store.data_dir)
        ls.ensure_up()
        now = {w.key: fingerprint(context.instance, ls, w) for w in tasks}
    except ReviewServerDown as exc:
        return dg.SensorResult(skip_reason=dg.SkipReason(str(exc)), cursor=context.cursor)
    due = sorted(k for k, fp in now.items() if fp is not None and cur.get(k) != fp)
    if not due:
        return dg.SensorResult(skip_reason=dg.SkipReason("no step changed"), cursor=context.cursor)
    keys = [k for w in tasks if w.key in due for k in w.targets]
    state = content_hash(json.dumps({k: now[k] for k in due}, sort_keys=True), length=16)
    req = dg.RunRequest(
        run_key=f"protocol:{state}", asset_selection=keys, tags={"subtext/protocol_steps": ",".join(due)}
    )
    return dg.SensorResult(run_requests=[req], cursor=json.dumps({**cur, **{k: now[k] for k in due}}, sort_keys=True))


@dg.sensor(
    name="protocol_sensor",
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.STOPPED,
    target=dg.AssetSelection.assets(*[k for w in watched() for k in w.targets]),
    description="Pushes new units of each paper's human steps, and of each judge validation, to Label Studio and "
    "reads people's answers back (<benchmark>_<step>_tasks, then <benchmark>_<step>_results; "
    "<benchmark>_judge_tasks, then <benchmark>_judge_validation), one run per tick for those that changed.",
)
def protocol_sensor(
    context: dg.SensorEvaluationContext, storage: StorageResource, review: ReviewResource
) -> dg.SensorResult:
    return tick(context, storage, review)


defs = dg.Definitions(sensors=[protocol_sensor])
