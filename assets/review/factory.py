"""Human review assets, one set per registered benchmark (logic in ``forge/review``):

* ``<name>_verdicts`` (table ``verdicts``, rejects with stage ``human_review``): reads every
  annotation back; check ``review_coverage`` shows decided / needing review (WARN while items are
  pending: under policy ``required`` they are held back from the export, which is the policy
  working, not a failure);
* ``<name>_review_tasks`` (tables ``review_tasks``, ``review_task_ledger``), downstream of the
  verdicts: pushes every gated item that needs review to the benchmark's one review project,
  disputed items to its adjudication project, refused verdicts back to their reviewers
  (``returned``); idempotent (``forge/people/sync.py``, ``forge/review/loop.py``). The review
  sensor runs both, in this order, in one run per tick (``sensors/review.py``);
* ``<name>_human_tasks`` / ``<name>_human_eval``: the human baseline (``assets/review/human.py``).

Label Studio down: under policy ``required`` the assets fail with a message naming
``make review`` and write nothing (a push it stopped midway writes its ledger: the message says
how many tasks were pushed, and the next push continues); under ``advisory`` (the demo) they
complete with that note.
"""

import json
import time
from typing import Any

import dagster as dg

from assets.common import contract_check_specs, publish, table_metadata
from assets.llm_support import record_llm_calls
from forge.benchmarks.registry import resolve
from forge.benchmarks.review_spec import ReviewPolicy
from forge.benchmarks.spec import BenchmarkSpec
from forge.checks.nli import NLIResult
from forge.gates.stages import BLIND_PROMPT
from forge.people.client import ReviewServerDown
from forge.people.sync import PushInterrupted
from forge.provenance.versioning import content_hash, spec_parts
from forge.review import stages as rv
from forge.review.loop import LEDGER, RECONCILIATION
from forge.review.reprobe import Reprobe
from forge.splits.config import stage_settings
from resources.llm import LLMResource
from resources.nli import default_nli
from resources.review import ReviewResource
from resources.storage import StorageResource

GROUP = "review"
VERSION = "review-1"
COVERAGE_CHECK = "review_coverage"


class StageNLI:
    """The foil stage's NLI backend for the member checks of an edit (``EditChecks.nli``): the
    definitions' ``nli`` resource (``resources.nli.default_nli``, the same settings the stage runs
    with), built on the first edit that needs it (no weights loaded, no engine started otherwise);
    its LLM calls go to ``llm_calls`` under ``<b>_verdicts_nli``."""

    name = "stage_nli"

    def __init__(self, llm: LLMResource, stage: str, partition: str):
        self.llm, self.stage, self.partition = llm, stage, partition
        self.engine: Any = None
        self.backend: Any = None

    def classify(self, pairs: Any, item_ids: Any = None) -> list[NLIResult]:
        if self.backend is None:
            self.engine = self.llm.engine()
            self.backend = default_nli().classifier(engine=self.engine, stage=self.stage, partition=self.partition)
            self.name = self.backend.name
        return self.backend.classify(pairs, item_ids)


def md_values(md: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in md.items():
        if isinstance(v, (dict, list, tuple)):
            out[k] = dg.MetadataValue.json(json.loads(json.dumps(v, default=str)))
        else:
            out[k] = "" if v is None else v
    return out


def server_down(
    spec: BenchmarkSpec, exc: ReviewServerDown, context: dg.AssetExecutionContext, what: str = "nothing pushed or read"
) -> str:
    """Policy ``required``: a failed step naming ``make review`` (nothing written but a stopped
    push's ledger). Otherwise the note the asset completes with (the recorded tables stay as they
    are); ``what`` says what did not happen, unless the message already says what did."""
    if rv.settings(spec).policy == ReviewPolicy.REQUIRED:
        raise dg.Failure(description=str(exc), metadata={"how_to_start": "make review"})
    said = isinstance(exc, PushInterrupted)
    note = f"{exc} (policy {rv.settings(spec).policy}" + ("" if said else f": {what}") + ")"
    context.log.warning(f"{spec.name}: {note}")
    return note


def benchmark_review_defs(benchmark: str | BenchmarkSpec) -> dg.Definitions:
    spec = resolve(benchmark)
    tasks_key, verdicts_key = spec.asset("review_tasks"), spec.asset("verdicts")
    version = content_hash(VERSION, spec_parts(spec.review))

    @dg.asset(
        name=tasks_key,
        group_name=GROUP,
        kinds={"python"},
        deps=[spec.asset("gated"), verdicts_key],
        code_version=version,
        check_specs=contract_check_specs(tasks_key, ["review_tasks", LEDGER, RECONCILIATION]),
        metadata=table_metadata(["review_tasks", LEDGER, RECONCILIATION]),
        description=f"Pushes the gated {spec.title} items that need human review to the benchmark's one Label "
        "Studio review project (disputed items to its adjudication project, refused verdicts back to their "
        "reviewers), after reading the verdicts; every task in the append-only ledger. Start the tool with "
        "`make review`; the review sensor runs it.",
    )
    def _tasks(
        context: dg.AssetExecutionContext, storage: StorageResource, review: ReviewResource
    ) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        store = storage.store
        try:
            out = rv.run_review_tasks(store, spec, review.client(store.data_dir))
        except ReviewServerDown as exc:
            out = rv.run_review_tasks(store, spec, None, server_down(spec, exc, context))
        said = (out.metadata.get("reconciliation") or {}).get("message")
        if said:  # the catalog and the tool disagreed (a replaced database, ...): said, never fixed by deleting
            context.log.warning(said)
        return publish(
            store,
            {t: {spec.name: out.tables[t]} for t in ("review_tasks", LEDGER, RECONCILIATION)},
            metadata=md_values(out.metadata),
            asset_key=context.asset_key,
            started=t0,
        )

    @dg.asset(
        name=verdicts_key,
        group_name=GROUP,
        kinds={"python"},
        deps=[spec.asset("gated")],
        code_version=version,
        check_specs=[
            *contract_check_specs(verdicts_key, ["verdicts", "review_status"]),
            dg.AssetCheckSpec(
                COVERAGE_CHECK,
                asset=verdicts_key,
                description="Items decided by reviewers / items needing review (reviewers per item and splits from "
                "the benchmark's review declaration). WARN while any is pending or disputed: under policy "
                "`required` those are held back from the export (the policy working), under `advisory` exported "
                "unreviewed.",
            ),
        ],
        metadata=table_metadata(["verdicts", "review_status"]),
        description=f"Human verdicts on {spec.title} items read back from Label Studio (the review sensor "
        "materializes it when reviewers submit): item, reviewer, verdict, reason, edits, seconds, time; "
        "rejected items become rejects (stage `human_review`); agreement (Krippendorff's alpha) in metadata.",
    )
    def _verdicts(
        context: dg.AssetExecutionContext, storage: StorageResource, review: ReviewResource, llm: LLMResource
    ) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        store = storage.store
        probe = Reprobe(stage_settings(spec), llm.engine, BLIND_PROMPT)  # edited revisions re-enter the probe
        nli = StageNLI(llm, f"{verdicts_key}_nli", spec.name)  # an edited foil's contradiction test
        try:
            out = rv.run_verdicts(store, spec, review.client(store.data_dir), probe=probe, nli=nli)
        except ReviewServerDown as exc:
            down = server_down(spec, exc, context, "nothing read")
            out = rv.run_verdicts(store, spec, None, down, probe=probe, nli=nli)
        for engine in (out.engine, nli.engine):
            if engine is not None:
                record_llm_calls(store, engine)
        res = publish(
            store,
            {t: {spec.name: out.tables[t]} for t in ("verdicts", "review_status")},
            rejects=out.rejects,
            metadata=md_values(out.metadata),
            asset_key=context.asset_key,
            started=t0,
        )
        check = dg.AssetCheckResult(
            check_name=COVERAGE_CHECK,
            asset_key=context.asset_key,
            passed=out.metadata["items_needing_review"] == out.metadata["reviewed"],
            severity=dg.AssetCheckSeverity.WARN,  # items awaiting review are the policy working, not a failure
            metadata=md_values(rv.coverage_note(out.metadata)),
        )
        return dg.MaterializeResult(
            asset_key=context.asset_key, metadata=res.metadata, check_results=[*res.check_results, check]
        )

    return dg.Definitions(assets=[_tasks, _verdicts])
