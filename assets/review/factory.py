"""Human review assets, one set per registered benchmark (logic in ``forge/review``):

* ``<name>_review_tasks`` (table ``review_tasks``): pushes every gated item that needs review to
  Label Studio (one project per benchmark and export version), disputed items to the
  adjudication project; idempotent (``forge/review/sync.py``);
* ``<name>_verdicts`` (table ``verdicts``, rejects with stage ``human_review``): reads every
  annotation back (the review sensor materializes it when the tool changed); check
  ``review_coverage`` shows decided / needing review and stays red until every item is decided
  under policy ``required``;
* ``<name>_human_tasks`` / ``<name>_human_eval``: the human baseline (``assets/review/human.py``).

Label Studio down: under policy ``required`` the assets fail with a message naming
``make review`` and write nothing; under ``advisory`` (the demo) they complete with that note.
"""

import json
import time
from typing import Any

import dagster as dg

from assets.common import contract_check_specs, publish, table_metadata
from assets.llm_support import record_llm_calls
from forge.benchmarks.registry import resolve
from forge.benchmarks.spec import BenchmarkSpec
from forge.provenance.versioning import content_hash
from forge.review import stages as rv
from forge.review.client import ReviewServerDown
from forge.review.reprobe import Reprobe
from forge.review.spec import ReviewPolicy
from forge.splits.config import benchmark_config
from forge.splits.stages import BLIND_PROMPT
from resources.llm import LLMResource
from resources.review import ReviewResource
from resources.storage import StorageResource

GROUP = "review"
VERSION = "review-1"
COVERAGE_CHECK = "review_coverage"


def md_values(md: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in md.items():
        if isinstance(v, (dict, list, tuple)):
            out[k] = dg.MetadataValue.json(json.loads(json.dumps(v, default=str)))
        else:
            out[k] = "" if v is None else v
    return out


def server_down(spec: BenchmarkSpec, exc: ReviewServerDown, context: dg.AssetExecutionContext) -> str:
    """Policy ``required``: a failed step naming ``make review`` (nothing written). Otherwise the
    note the asset completes with (the recorded tables stay as they are)."""
    if rv.settings(spec).policy == ReviewPolicy.REQUIRED:
        raise dg.Failure(description=str(exc), metadata={"how_to_start": "make review"})
    note = f"{exc} (policy {rv.settings(spec).policy}: nothing pushed or read)"
    context.log.warning(f"{spec.name}: {note}")
    return note


def benchmark_review_defs(benchmark: str | BenchmarkSpec) -> dg.Definitions:
    spec = resolve(benchmark)
    tasks_key, verdicts_key = spec.asset("review_tasks"), spec.asset("verdicts")
    version = content_hash(VERSION, repr(spec.review))

    @dg.asset(
        name=tasks_key,
        group_name=GROUP,
        kinds={"python"},
        deps=[spec.asset("gated")],
        code_version=version,
        check_specs=contract_check_specs(tasks_key, ["review_tasks"]),
        metadata=table_metadata(["review_tasks"]),
        description=f"Pushes the gated {spec.title} items that need human review to Label Studio (one project "
        f"per export version; disputed items to the adjudication project). Start the tool with `make review`.",
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
        return publish(
            store,
            {"review_tasks": {spec.name: out.tables["review_tasks"]}},
            metadata=md_values(out.metadata),
            asset_key=context.asset_key,
            started=t0,
        )

    @dg.asset(
        name=verdicts_key,
        group_name=GROUP,
        kinds={"python"},
        deps=[tasks_key],
        code_version=version,
        check_specs=[
            *contract_check_specs(verdicts_key, ["verdicts"]),
            dg.AssetCheckSpec(
                COVERAGE_CHECK,
                asset=verdicts_key,
                description="Items decided by reviewers / items needing review (reviewers per item and splits from "
                "the benchmark's review declaration); red until every item is decided under policy `required`.",
            ),
        ],
        metadata=table_metadata(["verdicts"]),
        description=f"Human verdicts on {spec.title} items read back from Label Studio (the review sensor "
        "materializes it when reviewers submit): item, reviewer, verdict, reason, edits, seconds, time; "
        "rejected items become rejects (stage `human_review`); agreement (Krippendorff's alpha) in metadata.",
    )
    def _verdicts(
        context: dg.AssetExecutionContext, storage: StorageResource, review: ReviewResource, llm: LLMResource
    ) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        store = storage.store
        probe = Reprobe(benchmark_config(spec), llm.engine, BLIND_PROMPT)  # edited revisions re-enter the probe
        try:
            out = rv.run_verdicts(store, spec, review.client(store.data_dir), probe=probe)
        except ReviewServerDown as exc:
            out = rv.run_verdicts(store, spec, None, server_down(spec, exc, context), probe=probe)
        if out.engine is not None:
            record_llm_calls(store, out.engine)
        res = publish(
            store,
            {"verdicts": {spec.name: out.tables["verdicts"]}},
            rejects=out.rejects,
            metadata=md_values(out.metadata),
            asset_key=context.asset_key,
            started=t0,
        )
        md = out.metadata
        done = md["items_needing_review"] == md["reviewed"]
        required = md["policy"] == ReviewPolicy.REQUIRED
        check = dg.AssetCheckResult(
            check_name=COVERAGE_CHECK,
            asset_key=context.asset_key,
            passed=bool(done),
            severity=dg.AssetCheckSeverity.ERROR if required else dg.AssetCheckSeverity.WARN,
            metadata=md_values(
                {k: md[k] for k in ("coverage", "accepted", "rejected", "disputed", "pending", "policy")}
            ),
        )
        return dg.MaterializeResult(
            asset_key=context.asset_key, metadata=res.metadata, check_results=[*res.check_results, check]
        )

    return dg.Definitions(assets=[_tasks, _verdicts])
