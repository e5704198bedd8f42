"""Human protocol step assets, two per step a paper declares (``BenchmarkSpec.human_steps``; logic in
``forge/protocol``; docs/review.md "Protocol steps"):

* ``<name>_<step>_tasks``: the units of the stage the step corrects become Label Studio tasks with the
  LLM's answer as a prediction (idempotent: a unit with a task is not pushed again);
* ``<name>_<step>_results`` (tables ``protocol_results``, ``protocol_answers``): every annotation read
  back, one row per unit with ``decided_by`` human or llm. The recipe stage after the step reads it.

Both need Label Studio (``make review``); down, they fail with the way out and write nothing.
"""

import dagster as dg

from assets.common import contract_check_specs, publish, table_metadata
from assets.llm_support import record_llm_calls
from assets.review.factory import md_values, server_down
from forge.benchmarks.protocol_spec import HumanStep
from forge.benchmarks.registry import resolve
from forge.benchmarks.spec import BenchmarkSpec
from forge.people.client import ReviewServerDown
from forge.protocol import flow, steps
from forge.provenance.versioning import content_hash
from forge.storage import TableStore
from resources.llm import LLMResource
from resources.review import ReviewResource
from resources.storage import StorageResource

GROUP = "protocol"
VERSION = "protocol-1"
TABLES = [steps.RESULTS, steps.ANSWERS]


def _frame(store: TableStore, step: HumanStep):
    try:
        return steps.stage_frame(store, step)
    except ValueError as exc:
        raise dg.Failure(str(exc)) from exc


def step_defs(spec: BenchmarkSpec, step: HumanStep) -> list[dg.AssetsDefinition]:
    tasks_key, results_key = spec.asset(f"{step.name}_tasks"), spec.asset(f"{step.name}_results")
    version = content_hash(VERSION, repr(step.fields), repr(step.sample), repr(step.thresholds), step.annotators)

    @dg.asset(
        name=tasks_key,
        group_name=GROUP,
        kinds={"python"},
        deps=[step.corrects],
        code_version=version,
        description=f"{spec.title} protocol step {step.name!r}: the units of {step.corrects} as Label Studio "
        f"tasks with the LLM's answer as a prediction people accept or correct. {step.note}",
    )
    def _tasks(
        context: dg.AssetExecutionContext, storage: StorageResource, review: ReviewResource
    ) -> dg.MaterializeResult:
        store = TableStore(storage.data_dir)
        try:
            counts = steps.push(review.client(store.data_dir), store, spec, step, _frame(store, step))
        except ReviewServerDown as exc:  # policy required: fails naming `make review`; else a note
            return dg.MaterializeResult(metadata={"note": server_down(spec, exc, context, "nothing pushed")})
        return dg.MaterializeResult(metadata=md_values(counts))

    judged = step.control is not None and step.control.judge is not None  # control answers judged by an LLM

    def read_back(context: dg.AssetExecutionContext, storage: StorageResource, review: ReviewResource, llm=None):
        store = TableStore(storage.data_dir)
        key = steps.part(spec, step)
        engine = llm.engine() if llm is not None else None
        try:
            ans, res, figures = steps.read(
                review.client(store.data_dir), store, spec, step, _frame(store, step), engine=engine
            )
            if engine is not None:  # the control judge's calls, in llm_calls like every stage's
                record_llm_calls(store, engine, [(results_key, key)])
                figures["control_judge_calls"] = len(engine.calls_frame())
        except ReviewServerDown as exc:  # under every policy: the last read stands, the LLM decides the rest
            note = f"{exc} (nothing read; the last read stands, the LLM's result is used for every other unit)"
            context.log.warning(f"{spec.name} {step.name}: {note}")
            res, ans = (steps.last(store, t, key) for t in (steps.RESULTS, steps.ANSWERS))
            res = flow.offline_results(spec, step, _frame(store, step), res)
            figures = {"note": note, **steps.figures(res, ans, {})}
        return publish(store, {steps.RESULTS: {key: res}, steps.ANSWERS: {key: ans}}, metadata=md_values(figures))

    if judged:  # the llm resource only where the step's control answers are judged by the LLM

        def body(context: dg.AssetExecutionContext, storage: StorageResource, review: ReviewResource, llm: LLMResource):
            return read_back(context, storage, review, llm)
    else:

        def body(context: dg.AssetExecutionContext, storage: StorageResource, review: ReviewResource):
            return read_back(context, storage, review)

    _results = dg.asset(
        name=results_key,
        group_name=GROUP,
        kinds={"python"},
        deps=[tasks_key],
        code_version=version,
        check_specs=contract_check_specs(results_key, TABLES),
        metadata=table_metadata(TABLES),
        description=f"{spec.title} protocol step {step.name!r} read back: one row per unit of {step.corrects}, "
        "the human result where one exists, the LLM's otherwise (decided_by); the recipe stage after it reads it."
        + (" Control answers are judged by the step's LLM judge (its offline rule on the stub)." if judged else ""),
    )(body)

    return [_tasks, _results]


def protocol_defs(benchmark: str | BenchmarkSpec) -> dg.Definitions:
    spec = resolve(benchmark)
    return dg.Definitions(assets=[a for step in spec.human_steps for a in step_defs(spec, step)])
