"""The one asset factory of people's work (docs/review.md, "The loop"): every declared kind
(``forge.people.kind.PeopleKind``: item review, the blind baseline, each protocol step, judge
validation) becomes the pair ``<b>_<kind>_tasks`` → ``<b>_<kind>_results``. The assets are thin:
they hand the run's resources to the client's plain function (``Side``) and publish its
``StageResult`` (``forge/storage/result.py``); ``people_sensor`` (sensors/people.py) runs them.

Label Studio down: under policy ``required`` a side fails with a message naming ``make review``
and writes nothing (a push it stopped midway writes its ledger); otherwise it completes with the
note (each client says what stands meanwhile).
"""

# No `from __future__ import annotations`: Dagster reads the `context` annotation at definition time.
import time
from typing import Any

import dagster as dg

from assets.common import as_metadata, check_result, contract_check_specs, publish_result, table_metadata
from assets.llm_support import record_llm_calls
from forge.benchmarks import registry
from forge.benchmarks.spec import BenchmarkSpec
from forge.checks.nli import NLIResult
from forge.evals.people_kinds import kinds_of
from forge.people.kind import PairSide, PeopleKind, Side
from forge.people.push import PushInterrupted
from forge.splits.config import stage_settings
from forge.storage.result import StageResult
from resources.llm import LLMResource
from resources.nli import default_nli
from resources.review import ReviewResource
from resources.storage import StorageResource


class StageNLI:
    """A stage's NLI backend for the member checks of an edit (``EditChecks.nli``): the ``nli``
    resource's settings (``resources.nli.default_nli``, those the stage runs with), built on the
    first edit that needs it (no weights loaded, no engine started otherwise)."""

    name = "stage_nli"

    def __init__(self, engine_factory: Any, stage: str, partition: str):
        self.engine_factory, self.stage, self.partition = engine_factory, stage, partition
        self.backend: Any = None

    def classify(self, pairs: Any, item_ids: Any = None) -> list[NLIResult]:
        if self.backend is None:
            engine = self.engine_factory()
            self.backend = default_nli().classifier(engine=engine, stage=self.stage, partition=self.partition)
            self.name = self.backend.name
        return self.backend.classify(pairs, item_ids)


def server_down(kind: PeopleKind, exc: Exception, context: dg.AssetExecutionContext, what: str) -> str:
    """Policy ``required``: a failed step naming ``make review``. Otherwise the note the asset
    completes with; ``what`` says what did not happen, unless the message already says what did."""
    policy = kind.policy()
    if policy == "required":
        raise dg.Failure(description=str(exc), metadata={"how_to_start": "make review"})
    said = isinstance(exc, PushInterrupted)
    note = f"{exc} (policy {policy}" + ("" if said else f": {what}") + ")"
    context.log.warning(f"{kind.key}: {note}")
    return note


def run_side(
    context: dg.AssetExecutionContext,
    kind: PeopleKind,
    side: PairSide,
    storage: StorageResource,
    review: ReviewResource,
    llm: LLMResource | None,
) -> dg.MaterializeResult:
    t0 = time.perf_counter()
    store = storage.store
    engines: list[Any] = []

    def engine() -> Any:
        made = llm.engine()  # type: ignore[union-attr]
        engines.append(made)
        return made

    s = Side(
        store=store,
        asset=context.asset_key.to_user_string(),
        review=lambda: review.client(store.data_dir),
        blind=lambda: review.blind_client(store.data_dir),
        llm=engine if llm is not None else None,
        nli=(lambda stage: StageNLI(engine, stage, kind.owner)) if llm is not None else None,
        down=lambda exc, what: server_down(kind, exc, context, what),
        warn=context.log.warning,
    )
    out: StageResult = side.run(s)
    if out.record_llm:
        for made in engines:
            record_llm_calls(store, made, out.llm_parts)
    if not out.tables:
        checks = [check_result(c, context.asset_key) for c in out.checks]
        return dg.MaterializeResult(metadata=as_metadata(out.metadata), check_results=checks or None)
    return publish_result(store, out, context.asset_key, started=t0, keep_version=False)


def side_asset(kind: PeopleKind, name: str, side: PairSide) -> dg.AssetsDefinition:
    """One asset of the pair; the ``llm`` resource only where the side declares it."""
    key = kind.asset(name)
    checks = [
        *contract_check_specs(key, side.tables),
        *(dg.AssetCheckSpec(c.name, asset=key, description=c.description) for c in side.checks),
    ]
    if "llm" in side.needs:

        def body(
            context: dg.AssetExecutionContext, storage: StorageResource, review: ReviewResource, llm: LLMResource
        ) -> dg.MaterializeResult:
            return run_side(context, kind, side, storage, review, llm)
    else:

        def body(
            context: dg.AssetExecutionContext, storage: StorageResource, review: ReviewResource
        ) -> dg.MaterializeResult:
            return run_side(context, kind, side, storage, review, None)

    return dg.asset(
        name=key,
        group_name=kind.group,
        kinds={"python"},
        deps=list(side.deps),
        code_version=kind.code_version,
        check_specs=checks or None,
        metadata=table_metadata(side.tables) if side.tables else None,
        description=side.description,
    )(body)


def pair_defs(kind: PeopleKind) -> list[dg.AssetsDefinition]:
    return [side_asset(kind, "tasks", kind.tasks), side_asset(kind, "results", kind.results)]


def people_defs(benchmark: str | BenchmarkSpec, *families: str) -> dg.Definitions:
    """One benchmark's pairs; ``families`` (review, step, human, judge) narrows them (tests)."""
    spec = registry.resolve(benchmark)
    kinds = [k for k in kinds_of(spec, stage_settings(spec)) if not families or k.family in families]
    return dg.Definitions(assets=[a for k in kinds for a in pair_defs(k)])
