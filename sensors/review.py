"""``review_sensor``: closes the review loop (docs/review.md, "The loop").

Each tick, for every benchmark whose review policy is not ``off``, it asks what the loop has to
do (``forge.review.loop.todo``): a first push (gated items, nothing pushed yet), annotations the
verdicts table does not hold yet (new or changed), tasks deleted in the tool, gated items
materialized after the last push (a regeneration); and, for the human baseline, whether its
projects changed (a fingerprint). Everything due goes into ONE run per tick: per benchmark
``<b>_verdicts`` then ``<b>_review_tasks`` (read, then push: disputes reach adjudication, edited
revisions get their task, refused verdicts go back to their reviewers), ``<b>_export`` when the
benchmark's review settings say ``export_after_review``, and ``<b>_human_eval``.

Cursor: what the last requested run was for (a hash) and an outage counter. The same situation is
never requested twice (a failed run is retried when something changes, or once Label Studio was
seen down and is back: run key ``review:<outages>:<hash>``); while a loop run is queued or
running, the tick waits. Label Studio down: the tick is skipped with a message naming ``make
review``; nothing is lost, the next tick catches up.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import dagster as dg

from forge.benchmarks import registry
from forge.benchmarks.review_spec import ReviewPolicy
from forge.benchmarks.spec import BenchmarkSpec
from forge.evals import human as baseline
from forge.people import sync
from forge.people.client import ReviewServerDown
from forge.provenance.versioning import content_hash
from forge.review import loop
from forge.review.config import review_spec
from resources.review import ReviewResource
from resources.storage import StorageResource

LOOP_TAG = "subtext/review_loop"
QUEUE = "subtext/queue"
ACTIVE = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


def targets(name: str, kinds: set[str], export: bool = False) -> list[dg.AssetKey]:
    """What one benchmark adds to the run: the verdicts then the push (then, with
    ``export_after_review``, the export, which depends on the verdicts), the human baseline's scores."""
    keys = [dg.AssetKey(f"{name}_verdicts"), dg.AssetKey(f"{name}_review_tasks")] if "review" in kinds else []
    keys += [dg.AssetKey(f"{name}_export")] if keys and export else []
    keys += [dg.AssetKey(f"{name}_human_tasks")] if "human_push" in kinds else []
    return keys + ([dg.AssetKey(f"{name}_human_eval")] if "human" in kinds else [])


def _cursor(raw: str | None) -> dict[str, Any]:
    cur = json.loads(raw) if raw else {}
    if "outages" not in cur:  # an older cursor ({benchmark: fingerprint}): start afresh
        cur = {}
    return {"requested": cur.get("requested"), "outages": int(cur.get("outages", 0)), "human": cur.get("human") or {}}


def _regenerated(instance: dg.DagsterInstance, name: str) -> list[str]:
    """The gated items were materialized after the last push (a regeneration, a rebuild)."""
    gated = instance.get_latest_materialization_event(dg.AssetKey(f"{name}_gated"))
    pushed = instance.get_latest_materialization_event(dg.AssetKey(f"{name}_review_tasks"))
    if gated is not None and (pushed is None or gated.timestamp > pushed.timestamp):
        return [f"gated items changed at {gated.timestamp}"]
    return []


def _never_pushed(store: Any, name: str) -> list[str]:
    """A push recorded while Label Studio was down (an empty ``review_tasks`` part, no task in the
    ledger) with gated items waiting: the first push is still due once the tool is up."""
    if not (store.exists("review_tasks") and name in store.parts("review_tasks")):
        return []  # loop.todo's own "first push"
    if sync.pushed_ids(loop.load_ledger(store, name)):
        return []
    gated = store.exists("gated_items") and name in store.parts("gated_items")
    return ["first push (no task in the tool yet)"] if gated and len(store.read("gated_items", parts=[name])) else []


def _baseline_unpushed(store: Any, spec: BenchmarkSpec, human_rows: Any) -> list[str]:
    """The latest export's test items have no baseline task of that version (the export was made
    while Label Studio was down, or since the last push): ``<b>_human_tasks`` is due."""
    items, version = baseline.test_items(store, spec)
    if items.empty:
        return []
    titles = set(human_rows["project_title"].astype(str)) if human_rows is not None else set()
    if any(t.endswith(f" {version}") for t in titles):
        return []
    return [f"human baseline of {version} not pushed yet"]


def _in_flight(instance: dg.DagsterInstance) -> bool:
    return bool(instance.get_runs(filters=dg.RunsFilter(tags={LOOP_TAG: "1"}, statuses=ACTIVE), limit=1))


def _due(
    context: dg.SensorEvaluationContext,
    store: Any,
    ls: Any,
    cur: dict[str, Any],
    specs: Sequence[BenchmarkSpec],
    blind: Any = None,
) -> tuple[dict[str, list[str]], list[dg.AssetKey], dict[str, str]]:
    """(benchmark → why its loop runs, the run's asset keys, the human projects' fingerprints);
    ``blind``: the blind baseline's instance, where the human projects live (None: ``ls``)."""
    tasks = store.read("review_tasks") if store.exists("review_tasks") else None
    if store.exists("gated_items") or tasks is not None:
        ls.ensure_up()
    due: dict[str, list[str]] = {}
    keys: list[dg.AssetKey] = []
    human_fp: dict[str, str] = {}
    for spec in specs:
        name = spec.name
        rs = review_spec(name, spec.review)  # read per tick: a changed review setting counts at once
        if rs.policy == ReviewPolicy.OFF:
            continue
        why = loop.todo(ls, store, name) + _regenerated(context.instance, name) + _never_pushed(store, name)
        kinds = {"review"} if why else set()
        human = tasks[(tasks["benchmark"] == name) & (tasks["kind"] == "human")] if tasks is not None else None
        human = baseline.blind_rows(human) if human is not None else None  # on the blind instance
        unpushed = _baseline_unpushed(store, spec, human)
        if unpushed:
            why += unpushed
            kinds |= {"human", "human_push"}
        if human is not None and len(human):
            try:
                human_fp[name] = content_hash(sync.fingerprint(blind or ls, human), length=16)
            except ReviewServerDown as exc:  # the review loop goes on; the baseline waits for its instance
                context.log.warning(f"{name}: blind baseline not read: {exc}")
            if name in human_fp and cur["human"].get(name) != human_fp[name]:
                why.append(f"human answers {human_fp[name]}")
                kinds.add("human")
        if why:
            due[name] = why
            keys += targets(name, kinds, rs.export_after_review)
    return due, keys, human_fp


def tick(
    context: dg.SensorEvaluationContext,
    storage: StorageResource,
    review: ReviewResource,
    specs: Sequence[BenchmarkSpec],
) -> dg.SensorResult:
    store = storage.store
    cur = _cursor(context.cursor)
    if not store.exists("gated_items") and not store.exists("review_tasks"):
        return dg.SensorResult(skip_reason=dg.SkipReason("nothing to review yet"), cursor=context.cursor)
    try:
        ls, blind = review.client(store.data_dir), review.blind_client(store.data_dir)
        due, keys, human_fp = _due(context, store, ls, cur, specs, blind)
    except ReviewServerDown as exc:  # retried once the tool is back, even for the same situation
        down = {**cur, "requested": None, "outages": cur["outages"] + 1}
        return dg.SensorResult(skip_reason=dg.SkipReason(str(exc)), cursor=json.dumps(down, sort_keys=True))
    if not due:
        return dg.SensorResult(skip_reason=dg.SkipReason("nothing to read or push"), cursor=context.cursor)
    state = content_hash(json.dumps(due, sort_keys=True), length=16)
    if state == cur["requested"]:
        return dg.SensorResult(
            skip_reason=dg.SkipReason(f"already requested a run for this state ({', '.join(sorted(due))})"),
            cursor=context.cursor,
        )
    if _in_flight(context.instance):
        return dg.SensorResult(skip_reason=dg.SkipReason("a review loop run is in progress"), cursor=context.cursor)
    req = dg.RunRequest(
        run_key=f"review:{cur['outages']}:{state}",
        asset_selection=keys,
        # its own run queue (.dagster_home/dagster.yaml) and first in line: never behind a recipe re-run
        tags={
            LOOP_TAG: "1",
            QUEUE: "loop",
            "dagster/priority": "10",
            "subtext/review_benchmarks": ",".join(sorted(due)),
        },
    )
    new = {**cur, "requested": state, "human": {**cur["human"], **human_fp}}
    return dg.SensorResult(run_requests=[req], cursor=json.dumps(new, sort_keys=True))


def build_review_sensor(specs: Sequence[BenchmarkSpec]) -> dg.SensorDefinition:
    """The sensor over these benchmarks, resolved once here: its target and every tick use them."""

    @dg.sensor(
        name="review_sensor",
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.RUNNING,
        target=dg.AssetSelection.assets(
            *[k for s in specs for k in targets(s.name, {"review", "human", "human_push"}, True)]
        ),
        description="Closes the review loop (make review): one run per tick reads the verdicts and pushes "
        "(<benchmark>_verdicts, then <benchmark>_review_tasks; disputes to adjudication, edited revisions to "
        "review, refused verdicts back to their reviewers), and scores the human baseline (<benchmark>_human_eval).",
    )
    def review_sensor(
        context: dg.SensorEvaluationContext, storage: StorageResource, review: ReviewResource
    ) -> dg.SensorResult:
        return tick(context, storage, review, specs)

    return review_sensor


review_sensor = build_review_sensor(registry.specs())
defs = dg.Definitions(sensors=[review_sensor])
