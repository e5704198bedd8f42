"""A paper's human protocol step as a kind of people's work (``forge.people.kind``; docs/review.md,
"Protocol steps"): ``<b>_<step>_tasks`` pushes the units of the stage the step corrects, with the
LLM's answer as a prediction (a unit with a task is not pushed again); ``<b>_<step>_results``
(tables ``protocol_results``, ``protocol_answers``, ``protocol_agreement``) reads every annotation back, one row per unit
with ``decided_by`` human or llm. Due when the corrected stage or the step's project changed; a
new human result re-runs the stages that read the step (``HumanStep.read_by``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pandas as pd

from forge.benchmarks.protocol_spec import HumanStep
from forge.benchmarks.spec import BenchmarkSpec
from forge.people.client import ReviewServerDown
from forge.people.kind import FlowOn, PairSide, PeopleKind, Probe, Side, Watch, project_watch
from forge.protocol import flow, steps
from forge.protocol.agreement import AGREEMENT, step_agreement
from forge.provenance.versioning import content_hash
from forge.storage.result import StageResult

VERSION = "protocol-1"
TABLES = (steps.RESULTS, steps.ANSWERS, AGREEMENT)


def frame(side: Side, spec: BenchmarkSpec, step: HumanStep) -> pd.DataFrame:
    return steps.stage_frame(side.store, spec, step)  # a missing or malformed stage: its ValueError fails the step


def push(spec: BenchmarkSpec, step: HumanStep, side: Side) -> StageResult:
    try:
        counts = steps.push(side.review(), side.store, spec, step, frame(side, spec, step))
    except ReviewServerDown as exc:  # policy required: fails naming `make review`; else a note
        return StageResult(metadata={"note": side.down(exc, "nothing pushed")})
    return StageResult(metadata=dict(counts))


def read(spec: BenchmarkSpec, step: HumanStep, side: Side) -> StageResult:
    store, key = side.store, steps.part(spec, step)
    engine = side.llm() if side.llm is not None else None  # the control judge, where the step has one
    try:
        ans, res, figures = steps.read(side.review(), store, spec, step, frame(side, spec, step), engine=engine)
        if engine is not None:  # the control judge's calls, in llm_calls like every stage's
            figures["control_judge_calls"] = len(engine.calls_frame())
        recorded = True
    except ReviewServerDown as exc:  # under every policy: the last read stands, the LLM decides the rest
        note = f"{exc} (nothing read; the last read stands, the LLM's result is used for every other unit)"
        side.warn(f"{spec.name} {step.name}: {note}")
        res, ans = (steps.last(store, t, key) for t in (steps.RESULTS, steps.ANSWERS))
        res = flow.offline_results(spec, step, frame(side, spec, step), res)
        figures, recorded = {"note": note, **steps.figures(res, ans, {})}, False
    return StageResult(
        tables={steps.RESULTS: {key: res}, steps.ANSWERS: {key: ans}, AGREEMENT: {key: step_agreement(ans)}},
        metadata=figures,
        llm_parts=[(side.asset, key)],
        record_llm=recorded,
    )


def watch(spec: BenchmarkSpec, step: HumanStep, probe: Probe) -> Watch:
    """The corrected stage and the step's projects (its second pass too, in draft mode after_commit)."""
    title = steps.title(spec, step)
    return project_watch(probe, step.corrects, [title, title + steps.SECOND_PASS])


def step_kind(spec: BenchmarkSpec, step: HumanStep, policy: Callable[[], str]) -> PeopleKind:
    """``policy``: the benchmark's review policy now (the review settings sit on a floor above)."""
    judged = step.control is not None and step.control.judged  # control answers judged by an LLM
    tasks = spec.asset(f"{step.name}_tasks")
    on = FlowOn(
        read_by=tuple(step.read_by),
        marks=lambda store: flow.human_marks(store, spec, step),
        changed=flow.changed_units,
        batches=lambda store, units: flow.batches_of(store, step, units),
    )
    return PeopleKind(
        owner=spec.name,
        kind=step.name,
        family="step",
        group="protocol",
        code_version=content_hash(
            VERSION, repr(step.fields), repr(step.sample), repr(step.thresholds), step.annotators
        ),
        tasks=PairSide(
            deps=(step.corrects,),
            run=partial(push, spec, step),
            description=f"{spec.title} protocol step {step.name!r}: the units of {step.corrects} as Label Studio "
            f"tasks with the LLM's answer as a prediction people accept or correct. {step.note}",
        ),
        results=PairSide(
            deps=(tasks,),
            tables=TABLES,
            needs=frozenset({"llm"}) if judged else frozenset(),
            run=partial(read, spec, step),
            description=f"{spec.title} protocol step {step.name!r} read back: one row per unit of {step.corrects}, "
            "the human result where one exists, the LLM's otherwise (decided_by); the recipe stage after it reads "
            "it."
            + (" Control answers are judged by the step's LLM judge (its offline rule on the stub)." if judged else ""),
        ),
        watch=partial(watch, spec, step),
        flow=on if step.read_by else None,
        policy=policy,
    )
