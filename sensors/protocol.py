"""``protocol_sensor``: keeps the papers' human steps moving (docs/review.md, "Protocol steps").

Each tick, for every declared step (``BenchmarkSpec.human_steps``) and every judge validation
(benchmarks with an LLM judge) it compares a fingerprint with the cursor: the upstream asset's
latest materialization (the corrected stage, or ``<b>_eval``: new units to push) and the Label
Studio project (its counts and every task's ``updated_at``: an annotation added, changed or
removed). Everything that changed goes into ONE run (queue ``protocol``): ``<b>_<step>_tasks``
then ``<b>_<step>_results``, ``<b>_judge_tasks`` then ``<b>_judge_validation``. The same state is
never requested twice; Label Studio down: the tick is skipped with a message naming ``make
review``, and the next one catches up, pushing what a build left unpushed.

Results flow on: when a step's last read holds a human result that is new, changed or gone
(``forge.protocol.flow.human_marks``), the stages that read the step (``HumanStep.read_by``) run
again for the batches holding those units, one run per batch (queue ``build``), so an image people
dropped at inspection leaves ``iibench_labels`` with no hand-run build. Running by default: it
acts while ``make ui`` runs and waits, tick after tick, until ``make review`` does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import dagster as dg

from forge.benchmarks import registry
from forge.evals import judge_validation as jv
from forge.people.client import LabelStudio, ReviewServerDown
from forge.protocol import flow, steps
from forge.provenance.versioning import content_hash
from resources.review import ReviewResource
from resources.storage import StorageResource

KEYS = ("task_number", "total_annotations_number", "num_tasks_with_annotations")
QUEUE = "subtext/queue"  # the run queues of .dagster_home/dagster.yaml: protocol runs and the stages they feed


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
    parts = [f"stage@{stage.timestamp}"]
    # the step's project, and its second-pass project where it has one (draft mode after_commit)
    for project in (ls.project_by_title(w.title), ls.project_by_title(w.title + steps.SECOND_PASS)):
        if project is not None:
            pid = int(project["id"])
            parts.append(",".join(str(project.get(k)) for k in KEYS))
            parts.append(",".join(f"{t['id']}/{t.get('updated_at')}" for t in ls.tasks(pid)))
    return content_hash("|".join(parts), length=16)


def flow_on(store: Any, before: dict[str, dict[str, str]]) -> tuple[list[dg.RunRequest], dict[str, dict[str, str]]]:
    """The runs that pass new human results on (one per batch: the reading stages of every step
    whose units in it people decided anew), and every step's marks for the cursor."""
    marks: dict[str, dict[str, str]] = {}
    stale: dict[str, set[str]] = {}  # batch → the stages to run again
    why: dict[str, set[str]] = {}
    for spec, step in all_steps():
        key = f"{spec.name}/{step.name}"
        marks[key] = flow.human_marks(store, spec, step)
        changed = flow.changed_units(before.get(key, {}), marks[key])
        if not changed or not step.read_by:
            continue
        for batch in flow.batches_of(store, step, changed):
            stale.setdefault(batch, set()).update(step.read_by)
            why.setdefault(batch, set()).add(key)
    state = content_hash(json.dumps(marks, sort_keys=True), length=16)
    reqs = [
        dg.RunRequest(
            run_key=f"flow:{state}:{batch}",
            asset_selection=[dg.AssetKey(a) for a in sorted(assets)],
            partition_key=batch,
            tags={QUEUE: "build", "subtext/protocol_flow": ",".join(sorted(why[batch]))},
        )
        for batch, assets in sorted(stale.items())
    ]
    return reqs, marks


def tick(context: dg.SensorEvaluationContext, storage: StorageResource, review: ReviewResource) -> dg.SensorResult:
    store = storage.store
    cur = json.loads(context.cursor) if context.cursor else {}
    flows, marks = flow_on(store, cur.get("flow") or {})  # from the tables alone: runs with the tool down too
    cur = {**cur, "flow": marks}
    tasks = watched()
    try:
        ls = review.client(store.data_dir)
        ls.ensure_up()
        now = {w.key: fingerprint(context.instance, ls, w) for w in tasks}
    except ReviewServerDown as exc:
        if flows:
            return dg.SensorResult(run_requests=flows, cursor=json.dumps(cur, sort_keys=True))
        return dg.SensorResult(skip_reason=dg.SkipReason(str(exc)), cursor=context.cursor)
    due = sorted(k for k, fp in now.items() if fp is not None and cur.get(k) != fp)
    if not due and not flows:
        return dg.SensorResult(skip_reason=dg.SkipReason("no step changed"), cursor=json.dumps(cur, sort_keys=True))
    reqs = list(flows)
    if due:
        keys = [k for w in tasks if w.key in due for k in w.targets]
        state = content_hash(json.dumps({k: now[k] for k in due}, sort_keys=True), length=16)
        reqs.insert(
            0,
            dg.RunRequest(
                run_key=f"protocol:{state}",
                asset_selection=keys,
                tags={QUEUE: "protocol", "subtext/protocol_steps": ",".join(due)},
            ),
        )
    return dg.SensorResult(run_requests=reqs, cursor=json.dumps({**cur, **{k: now[k] for k in due}}, sort_keys=True))


def readers() -> list[dg.AssetKey]:
    return sorted({dg.AssetKey(a) for _spec, step in all_steps() for a in step.read_by}, key=lambda k: k.path)


@dg.sensor(
    name="protocol_sensor",
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    target=dg.AssetSelection.assets(*[k for w in watched() for k in w.targets], *readers()),
    description="Pushes new units of each paper's human steps, and of each judge validation, to Label Studio and "
    "reads people's answers back (<benchmark>_<step>_tasks, then <benchmark>_<step>_results; "
    "<benchmark>_judge_tasks, then <benchmark>_judge_validation), one run per tick for those that changed; "
    "a new human result re-runs the stages that read it (HumanStep.read_by) for its batches.",
)
def protocol_sensor(
    context: dg.SensorEvaluationContext, storage: StorageResource, review: ReviewResource
) -> dg.SensorResult:
    return tick(context, storage, review)


defs = dg.Definitions(sensors=[protocol_sensor])
