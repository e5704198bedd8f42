"""``people_sensor``: keeps people's work moving, every kind by one mechanism (docs/review.md, "The
loop"): item review, the protocol steps, the blind baseline and judge validation, each declared as
a ``forge.people.kind.PeopleKind`` (``forge.evals.people_kinds.kinds_of``).

Each tick it asks every kind whether it is due (``PeopleKind.watch``): a first push, annotations
not read yet, tasks deleted in the tool, a regeneration (review); a corrected stage or a project
that changed (steps, judge validation); an export without its baseline tasks, or new blind
answers (baseline). A push a build made while Label Studio was down is due as soon as it is up.
Everything due goes into ONE loop run (job ``people_loop``: in-process, run queue ``loop``,
priority 10): per kind its pair in order (review reads, then pushes) and nothing else but an
export after review where the benchmark says so; never a recipe stage, so the run stays short and
never waits behind a recipe or protocol re-run.

Results flow on: a new, changed or gone human result of a step re-runs the stages that read it
(``HumanStep.read_by``) for the batches holding those units, as separate runs (job
``people_flow``, queue ``build``), one per batch; they never hold the loop's slot.

Cursor: what the last loop run was for (a hash), the fingerprints it was asked for, an outage
counter and the steps' human marks. The same situation is never requested twice (after an outage
it is: run key ``people:<outages>:<hash>``); while a loop run is queued or running, the tick
waits. Label Studio down: the tick is skipped with a message naming ``make review`` (the
flow-on runs, read from the tables, still go); nothing is lost, the next tick catches up.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import dagster as dg

from forge.benchmarks import registry
from forge.benchmarks.spec import BenchmarkSpec
from forge.evals.people_kinds import kinds_of
from forge.people.client import ReviewServerDown
from forge.people.kind import PeopleKind, Probe, Watch
from forge.provenance.versioning import content_hash
from forge.splits.config import stage_settings
from jobs.people import FLOW_JOB, LOOP_JOB, people_jobs
from resources.review import ReviewResource
from resources.storage import StorageResource

LOOP_TAG = "subtext/people_loop"
QUEUE = "subtext/queue"  # the run queues of .dagster_home/dagster.yaml
INTERVAL = 10  # seconds between ticks: a person's action reaches its next task within a tick and one run
ACTIVE = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


def _cursor(raw: str | None) -> dict[str, Any]:
    cur = json.loads(raw) if raw else {}
    return {
        "requested": cur.get("requested"),
        "outages": int(cur.get("outages", 0)),
        "seen": cur.get("seen") or {},  # kind → the fingerprint the last loop run was asked for
        "flow": cur.get("flow") or {},  # step → unit → its human result's mark
    }


def _dump(cur: dict[str, Any]) -> str:
    return json.dumps(cur, sort_keys=True)


def flow_on(
    store: Any, kinds: Sequence[PeopleKind], before: dict[str, dict[str, str]]
) -> tuple[list[dg.RunRequest], dict]:
    """The runs that pass new human results on (one per batch: the reading stages of every kind
    whose units in it people decided anew), and every kind's marks for the cursor."""
    marks: dict[str, dict[str, str]] = {}
    stale: dict[str, set[str]] = {}  # batch → the stages to run again
    why: dict[str, set[str]] = {}
    for k in kinds:
        if k.flow is None:
            continue
        marks[k.key] = k.flow.marks(store)
        changed = k.flow.changed(before.get(k.key, {}), marks[k.key])
        for batch in k.flow.batches(store, changed) if changed else []:
            stale.setdefault(batch, set()).update(k.flow.read_by)
            why.setdefault(batch, set()).add(k.key)
    state = content_hash(json.dumps(marks, sort_keys=True), length=16)
    reqs = [
        dg.RunRequest(
            run_key=f"flow:{state}:{batch}",
            job_name=FLOW_JOB,
            asset_selection=[dg.AssetKey(a) for a in sorted(assets)],
            partition_key=batch,
            tags={QUEUE: "build", "subtext/protocol_flow": ",".join(sorted(why[batch]))},
        )
        for batch, assets in sorted(stale.items())
    ]
    return reqs, marks


def due(
    probe: Probe, kinds: Sequence[PeopleKind], seen: dict[str, str]
) -> tuple[dict[str, tuple[PeopleKind, Watch, list[str]]], str]:
    """kind → (its declaration, its watch, why it runs) for every kind due now, and the state of
    the whole situation (every kind's reasons and fingerprint, due or not: a kind whose fingerprint
    was asked for stays in it, so a request does not change the state it was made for)."""
    out: dict[str, tuple[PeopleKind, Watch, list[str]]] = {}
    situation: dict[str, list[str]] = {}
    for k in kinds:
        w = k.watch(probe)
        why = list(w.reasons)
        if w.reasons or w.fingerprint is not None:
            situation[k.key] = [*w.reasons, str(w.fingerprint)]
        if w.fingerprint is not None and seen.get(k.key) != w.fingerprint:
            why.append(f"changed: {w.fingerprint}")
        if why:
            out[k.key] = (k, w, why)
    return out, content_hash(json.dumps(situation, sort_keys=True), length=16)


def loop_request(now: dict[str, tuple[PeopleKind, Watch, list[str]]], state: str, outages: int) -> dg.RunRequest:
    keys: list[str] = []
    for k, w, _why in now.values():
        keys += [a for a in k.targets(w.push) if a not in keys]
    fams = {
        f: sorted(key for key, (k, _w, _y) in now.items() if k.family in f)
        for f in (("review", "human"), ("step", "judge"))
    }
    tags = {
        LOOP_TAG: "1",
        QUEUE: "loop",  # its own run queue (.dagster_home/dagster.yaml), first in line
        "dagster/priority": "10",
        "subtext/people_due": ",".join(sorted(now)),
        # a run whose worker died or could not load the code location is run again once by the daemon
        # (.dagster_home/dagster.yaml run_retries): the same situation is never requested twice, so
        # without it people would wait until something else changed. A failing step is not retried.
        "dagster/max_retries": "1",
        "dagster/retry_on_asset_or_op_failure": "false",
    }
    if fams[("review", "human")]:
        tags["subtext/review_benchmarks"] = ",".join(sorted({key.split("/")[0] for key in fams[("review", "human")]}))
    if fams[("step", "judge")]:
        tags["subtext/protocol_steps"] = ",".join(fams[("step", "judge")])
    return dg.RunRequest(
        run_key=f"people:{outages}:{state}",
        job_name=LOOP_JOB,
        asset_selection=[dg.AssetKey(a) for a in keys],
        tags=tags,
    )


class OneTick:
    """A Label Studio client whose project list is read once per tick: listing projects is the
    tool's slowest call (it counts every project's tasks and annotations), and every kind's watch
    looks its projects up by title. Everything else goes to the client."""

    def __init__(self, ls: Any):
        self._ls, self._projects = ls, None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ls, name)

    def projects(self) -> list[dict[str, Any]]:
        if self._projects is None:
            self._projects = self._ls.projects()
        return self._projects

    def project_by_title(self, title: str) -> dict[str, Any] | None:
        return next((p for p in self.projects() if p.get("title") == title), None)


def _in_flight(instance: dg.DagsterInstance) -> bool:
    return bool(instance.get_runs(filters=dg.RunsFilter(tags={LOOP_TAG: "1"}, statuses=ACTIVE), limit=1))


def tick(
    context: dg.SensorEvaluationContext, storage: StorageResource, review: ReviewResource, kinds: Sequence[PeopleKind]
) -> dg.SensorResult:
    store = storage.store
    cur = _cursor(context.cursor)
    flows, marks = flow_on(store, kinds, cur["flow"])  # from the tables alone: runs with the tool down too
    cur["flow"] = marks

    def materialized_at(key: str) -> float | None:
        event = context.instance.get_latest_materialization_event(dg.AssetKey(key))
        return None if event is None else event.timestamp

    try:
        ls, blind = review.client(store.data_dir), review.blind_client(store.data_dir)
        ls.ensure_up()
        probe = Probe(store, OneTick(ls), OneTick(blind), materialized_at, cur["outages"], context.log.warning)
        now, state = due(probe, kinds, cur["seen"])
    except ReviewServerDown as exc:  # retried once the tool is back, even for the same situation
        down = {**cur, "requested": None, "outages": cur["outages"] + 1}
        return dg.SensorResult(
            run_requests=flows, skip_reason=None if flows else dg.SkipReason(str(exc)), cursor=_dump(down)
        )
    reqs = list(flows)
    if not now:
        skip = None if reqs else dg.SkipReason("nothing to read or push")
        return dg.SensorResult(run_requests=reqs, skip_reason=skip, cursor=_dump(cur))
    if state == cur["requested"]:
        skip = dg.SkipReason(f"already requested a run for this state ({', '.join(sorted(now))})")
    elif _in_flight(context.instance):
        skip = dg.SkipReason("a people loop run is in progress")
    else:
        reqs.insert(0, loop_request(now, state, cur["outages"]))
        seen = {key: w.fingerprint for key, (_k, w, _y) in now.items() if w.fingerprint is not None}
        cur = {**cur, "requested": state, "seen": {**cur["seen"], **seen}}
        return dg.SensorResult(run_requests=reqs, cursor=_dump(cur))
    return dg.SensorResult(run_requests=reqs, skip_reason=None if reqs else skip, cursor=_dump(cur))


def build_people_sensor(specs: Sequence[BenchmarkSpec]) -> dg.SensorDefinition:
    """The sensor over these benchmarks' kinds: its jobs are made from them here; each tick makes them
    afresh from the settings in effect then (``stage_settings``, once per benchmark, handed to its
    kinds whole), so a changed review policy counts at the next tick without a reload."""
    kinds = [k for spec in specs for k in kinds_of(spec, stage_settings(spec))]

    @dg.sensor(
        name="people_sensor",
        minimum_interval_seconds=INTERVAL,
        default_status=dg.DefaultSensorStatus.RUNNING,
        jobs=people_jobs(kinds),
        description="Keeps people's work moving (make review): each tick, one run reads and pushes every kind "
        "that is due (<benchmark>_<kind>_tasks / _results: item review, protocol steps, the blind baseline, "
        "judge validation; review reads first, so disputes reach adjudication at once); a new human result "
        "re-runs the stages that read it (HumanStep.read_by) for its batches, as separate runs.",
    )
    def people_sensor(
        context: dg.SensorEvaluationContext, storage: StorageResource, review: ReviewResource
    ) -> dg.SensorResult:
        return tick(context, storage, review, [k for spec in specs for k in kinds_of(spec, stage_settings(spec))])

    return people_sensor


people_sensor = build_people_sensor(registry.specs())
defs = dg.Definitions(sensors=[people_sensor])
