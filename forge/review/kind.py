"""Item review as a kind of people's work (``forge.people.kind``; docs/review.md, "The loop"):
``<b>_review_results`` reads every annotation back (tables ``verdicts``, ``review_status``; check
``review_coverage``), then ``<b>_review_tasks`` pushes (tables ``review_tasks``, the ledger, the
reconciliation): disputes reach adjudication and refused verdicts return to their reviewers in
the same run. Due while ``forge.review.loop.todo`` says so, after a regeneration, or while a push
made with the tool down left nothing in it."""

from __future__ import annotations

from functools import partial

from forge.benchmarks.hooks import review_hooks
from forge.benchmarks.review_spec import ReviewPolicy, ReviewSpec
from forge.benchmarks.spec import BenchmarkSpec
from forge.gates.stages import BLIND_PROMPT
from forge.people import ledger
from forge.people.client import ReviewServerDown
from forge.people.kind import Check, PairSide, PeopleKind, Probe, Side, Watch
from forge.provenance.versioning import content_hash, spec_parts
from forge.review import loop
from forge.review import stages as rv
from forge.review.reprobe import Reprobe
from forge.splits.config import StageSettings
from forge.storage import TableStore
from forge.storage import result as sr

VERSION = "review-1"
COVERAGE_CHECK = "review_coverage"
TASK_TABLES = ("review_tasks", loop.LEDGER, loop.RECONCILIATION)
RESULT_TABLES = ("verdicts", "review_status")


def push(spec: BenchmarkSpec, rs: ReviewSpec, side: Side) -> sr.StageResult:
    try:
        out = rv.run_review_tasks(side.store, spec, rs, side.review())
    except ReviewServerDown as exc:
        out = rv.run_review_tasks(side.store, spec, rs, None, side.down(exc, "nothing pushed or read"))
    said = (out.metadata.get("reconciliation") or {}).get("message")
    if said:  # the catalog and the tool disagreed (a replaced database, ...): said, never fixed by deleting
        side.warn(said)
    return out.only(*TASK_TABLES)


def read(spec: BenchmarkSpec, settings: StageSettings, side: Side) -> sr.StageResult:
    assert side.llm is not None and side.nli is not None  # declared: needs llm
    probe = Reprobe(settings, side.llm, BLIND_PROMPT)  # edited revisions re-enter the probe
    nli = side.nli(f"{side.asset}_nli")  # an edited foil's contradiction test
    rs = settings.review_settings()
    try:
        out = rv.run_verdicts(side.store, spec, rs, side.review(), probe=probe, nli=nli)
    except ReviewServerDown as exc:
        out = rv.run_verdicts(side.store, spec, rs, None, side.down(exc, "nothing read"), probe=probe, nli=nli)
    md = out.metadata
    coverage = sr.Check(  # items awaiting review are the policy working, not a failure: WARN
        COVERAGE_CHECK, md["items_needing_review"] == md["reviewed"], "warn", rv.coverage_note(md)
    )
    return sr.StageResult({t: out.tables[t] for t in RESULT_TABLES}, out.rejects, md, [coverage])


def never_pushed(store: TableStore, name: str) -> list[str]:
    """A push recorded while Label Studio was down (an empty ``review_tasks`` part, no task in the
    ledger) with gated items waiting: the first push is still due once the tool is up."""
    if not (store.exists("review_tasks") and name in store.parts("review_tasks")):
        return []  # loop.todo's own "first push"
    if ledger.pushed_ids(loop.load_ledger(store, name)):
        return []
    gated = store.exists("gated_items") and name in store.parts("gated_items")
    return ["first push (no task in the tool yet)"] if gated and len(store.read("gated_items", parts=[name])) else []


def watch(spec: BenchmarkSpec, rs: ReviewSpec, probe: Probe) -> Watch:
    if rs.policy == ReviewPolicy.OFF:  # the sensor makes the kinds afresh each tick: a changed setting counts at once
        return Watch()
    name = spec.name
    why = loop.todo(probe.review, probe.store, name) + never_pushed(probe.store, name)
    gated, pushed = probe.materialized_at(spec.asset("gated")), probe.materialized_at(spec.asset("review_tasks"))
    if gated is not None and (pushed is None or gated > pushed):  # a regeneration, a rebuild
        why.append(f"gated items changed at {gated}")
    return Watch(reasons=why)


def review_kind(spec: BenchmarkSpec, settings: StageSettings) -> PeopleKind:
    """Item review of ``spec`` under ``settings`` (``stage_settings``: resolved by the caller, the
    people factory or the sensor's tick, and handed to every side whole)."""
    results = spec.asset("review_results")
    rs = settings.review_settings()
    return PeopleKind(
        owner=spec.name,
        kind="review",
        family="review",
        group="review",
        code_version=content_hash(VERSION, {**spec_parts(spec.review), **spec_parts(review_hooks(spec.hooks))}),
        tasks=PairSide(
            deps=(spec.asset("gated"), results),
            tables=TASK_TABLES,
            run=partial(push, spec, rs),
            description=f"Pushes the gated {spec.title} items that need human review to the benchmark's one Label "
            "Studio review project (disputed items to its adjudication project, refused verdicts back to their "
            "reviewers), after reading the verdicts; every task in the append-only ledger. Start the tool with "
            "`make review`; the people sensor runs it.",
        ),
        results=PairSide(
            deps=(spec.asset("gated"),),
            tables=RESULT_TABLES,
            needs=frozenset({"llm"}),
            checks=(
                Check(
                    COVERAGE_CHECK,
                    "Items decided by reviewers / items needing review (reviewers per item and splits from the "
                    "benchmark's review declaration). WARN while any is pending or disputed: under policy `required` "
                    "those are held back from the export (the policy working), under `advisory` exported unreviewed.",
                ),
            ),
            run=partial(read, spec, settings),
            description=f"Human verdicts on {spec.title} items read back from Label Studio (the people sensor "
            "materializes it when reviewers submit): item, reviewer, verdict, reason, edits, seconds, time; "
            "rejected items become rejects (stage `human_review`); agreement (Krippendorff's alpha) in metadata.",
        ),
        watch=partial(watch, spec, rs),
        also=lambda: (spec.asset("export"),) if rs.export_after_review else (),
        may_add=(spec.asset("export"),),
        policy=lambda: str(rs.policy),
    )
