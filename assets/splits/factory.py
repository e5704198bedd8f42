"""One identical set of downstream assets per registered benchmark:
``<name>_splits → <name>_gated → <name>_export`` (logic in ``forge/splits/stages.py``, ``forge/gates/stages.py``, ``forge/export/stages.py``).

* ``<name>_splits`` (table ``splits``, file ``<name>``): leakage groups (source item,
  channel, near-duplicate image, and the benchmark's unit such as a pool) assigned
  whole to splits, stratified by category. Blocking check ``no_leakage_across_splits``
  re-audits the written table.
* ``<name>_gated`` (tables ``gated_items`` and ``gate_results``): drops empty / malformed /
  duplicate / media-less items (whole units), runs the blind test per the benchmark's
  policy (stage ``blind_solver``), re-balances correct-option positions unless the options
  have a fixed order; one check per gate with its figure.
* ``<name>_export`` (table ``exports``): an immutable ``data/exports/<name>/v<N>/`` folder
  that ``datasets.load_dataset`` reads, with a dataset card; refuses stub-made items unless
  ``force_stub``.

An empty or missing items table never fails a run: each asset completes with a ``note``.
"""

import time

import dagster as dg

from assets.automation import FAN_IN
from assets.common import check_result, contract_check_specs, publish_result, table_metadata
from assets.llm_support import record_llm_calls
from assets.releases.keys import release_deps
from forge.benchmarks.registry import resolve
from forge.benchmarks.spec import BenchmarkSpec
from forge.export import stages as export
from forge.gates import stages as gates
from forge.gold.apply import gold_version
from forge.provenance.versioning import content_hash
from forge.splits import stages as st
from forge.splits.config import StageSettings, stage_settings
from resources.llm import LLMResource
from resources.storage import StorageResource


def benchmark_defs(benchmark: str | BenchmarkSpec) -> dg.Definitions:
    """The shared stages of one benchmark: splits (with its leakage check), gated, export."""
    spec = resolve(benchmark)
    settings = stage_settings(spec)  # parsed once; every stage below gets it whole
    splits, leak = _splits_defs(spec, settings)
    return dg.Definitions(
        assets=[splits, _gated_asset(spec, settings), _export_asset(spec, settings)], asset_checks=[leak]
    )


def _splits_defs(spec: BenchmarkSpec, settings: StageSettings) -> tuple[dg.AssetsDefinition, dg.AssetChecksDefinition]:
    split_key = spec.asset("splits")

    @dg.asset(
        name=split_key,
        group_name="splits",
        kinds={"python"},
        deps=[spec.items_asset, *release_deps(spec.name)],
        automation_condition=FAN_IN,
        # gold_version: the explicit gold step (forge/gold/apply.py) these three assets read items through
        code_version=content_hash(st.VERSION, settings.version_slice("split"), settings.unit_key, gold_version(spec)),
        check_specs=contract_check_specs(split_key, ["splits"]),
        metadata=table_metadata(["splits"]),
        description=f"Leakage-free, category-stratified splits of `{spec.items_table}` (table `splits`, file "
        f"`{spec.name}`): items sharing a source, channel, near-duplicate image"
        + (f" or `{spec.split.unit_key}`" if spec.split.unit_key else "")
        + " form one group; groups never span splits.",
    )
    def _splits(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        out = st.compute_splits(storage.store, spec, settings)
        return publish_result(storage.store, out, context.asset_key, started=t0)

    @dg.asset_check(
        asset=split_key,
        name="no_leakage_across_splits",
        blocking=True,
        description="0 linked item pairs (same source item, channel, duplicates group or pHash within the "
        "threshold) across two splits, re-audited from the written `splits` table.",
    )
    def _leak(storage: StorageResource) -> dg.AssetCheckResult:
        return check_result(st.leakage_check(storage.store, spec, settings))

    return _splits, _leak


def _gated_asset(spec: BenchmarkSpec, settings: StageSettings) -> dg.AssetsDefinition:
    split_key, gated_key = spec.asset("splits"), spec.asset("gated")

    class GateConfigRun(dg.Config):
        blind_action: str = str(settings.gates.blind.action)  # report | drop (opt-in) | off

    gate_specs = contract_check_specs(gated_key, ["gated_items", "gate_results"]) + [
        dg.AssetCheckSpec(name, asset=gated_key, description=desc) for name, desc in gates.GATE_CHECKS.items()
    ]

    @dg.asset(
        name=gated_key,
        group_name="splits",
        kinds={"openai", "python"},
        pool="llm",
        deps=[split_key],
        code_version=content_hash(
            st.VERSION, settings.version_slice("gate"), gold_version(spec), files=[gates.BLIND_PROMPT]
        ),
        check_specs=gate_specs,
        metadata=table_metadata(["gated_items"]),
        description=f"Quality gates on `{spec.items_table}` before export: empty/malformed/duplicate items dropped"
        + (f" (whole `{spec.split.unit_key}` units)" if spec.split.unit_key else "")
        + f"; blind text-only test: {spec.blind.action}, per {spec.blind.unit}; correct-option positions "
        + (
            "re-balanced per split (never an imported release item's)"
            if spec.options == "balance"
            else "never moved (fixed order)"
        )
        + ". Tables `gated_items`, `gate_results`.",
    )
    def _gated(
        context: dg.AssetExecutionContext, config: GateConfigRun, storage: StorageResource, llm: LLMResource
    ) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        out = gates.run_gates(storage.store, spec, settings.with_blind_action(config.blind_action), llm.engine)
        if out.engine is not None:
            record_llm_calls(storage.store, out.engine, [(gates.BLIND_STAGE, spec.name)])
        return publish_result(storage.store, out, context.asset_key, started=t0)

    return _gated


def _export_asset(spec: BenchmarkSpec, settings: StageSettings) -> dg.AssetsDefinition:
    gated_key, export_key = spec.asset("gated"), spec.asset("export")

    class ExportConfigRun(dg.Config):
        force_stub: bool = settings.export.force_stub

    @dg.asset(
        name=export_key,
        group_name="splits",
        kinds={"python", "parquet"},
        # the review gate reads <name>_review_results: a review marks the export Unsynced (docs/review.md);
        # no cycle, the review tasks read the gated items, not the export
        deps=[gated_key, spec.asset("review_results")],
        # force_stub is a run flag (the demo sets it), not logic: it stays out of the version so a
        # demo run does not leave every export Unsynced in the UI.
        code_version=content_hash(
            st.VERSION,
            settings.version_slice("export"),
            gold_version(spec),
            files=[gates.BLIND_PROMPT],
        ),
        check_specs=contract_check_specs(export_key, ["exports"])
        + [
            dg.AssetCheckSpec(
                "export_no_stub",
                asset=export_key,
                description="No item made by the stub backend (refused unless force_stub).",
            ),
            dg.AssetCheckSpec(
                "export_integrity",
                asset=export_key,
                description="Every file of every version still matches its manifest sha256 (immutability).",
            ),
        ],
        metadata=table_metadata(["exports"]),
        description=f"Immutable versioned export of the gated {spec.title} items to data/exports/{spec.name}/v<N>/ "
        "(JSONL + Parquet + media + provenance + dataset card), loadable with datasets.load_dataset.",
    )
    def _export(
        context: dg.AssetExecutionContext, config: ExportConfigRun, storage: StorageResource
    ) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        out = export.run_export(storage.store, spec, settings, config.force_stub)
        md = out.metadata
        if md.get("status") == "refused":  # a refused export is a failed step, not a green run
            raise dg.Failure(
                description=str(md.get("note", f"{spec.name} export refused")),
                metadata={"stub_items": md.get("stub_items", 0)},
            )
        return publish_result(storage.store, out, context.asset_key, started=t0)

    return _export
