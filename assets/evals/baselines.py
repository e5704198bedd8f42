"""Evaluations a paper reports beside the models of config/models.yaml (``EvalSpec.extra_evals``,
e.g. a baseline that is no chat model): one asset ``<paper>_<name>`` each, after the paper's
export, writing ``eval_predictions`` / ``eval_scores`` part ``<model>__<paper>``. The paper's
package holds what it computes (its hooks' ``extra_eval_configure`` / ``extra_eval_evaluate``, by
the evaluation's name); this factory only wires it."""

# No `from __future__ import annotations`: Dagster reads the `context` annotation at definition time.
import time

import dagster as dg

from assets.common import contract_check_specs, publish, table_metadata
from forge.benchmarks import registry
from forge.benchmarks.spec import BenchmarkSpec, ExtraEval
from forge.evals.config import benchmark_block, load_eval_config
from forge.evals.pipeline import load_export, select_items
from resources.storage import StorageResource

TABLES = ["eval_predictions", "eval_scores"]


def _skipped(why: str) -> dg.MaterializeResult:
    """Nothing evaluated, nothing written: the contract checks hold on the unchanged tables."""
    checks = [dg.AssetCheckResult(check_name=f"contract_{t}", passed=True, metadata={"skipped": why}) for t in TABLES]
    return dg.MaterializeResult(metadata={"skipped": why}, check_results=checks)


def _extra_eval_asset(spec: BenchmarkSpec, extra: ExtraEval) -> dg.AssetsDefinition:
    name = spec.asset(extra.name)

    @dg.asset(
        name=name,
        group_name="evals",
        kinds={"python"},
        deps=[dg.AssetDep(spec.asset("export"))],
        code_version=extra.code_version,
        check_specs=contract_check_specs(name, TABLES),
        metadata=table_metadata(TABLES),
        description=extra.description,
    )
    def _asset(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        store = storage.store
        cfg = load_eval_config()
        bcfg = benchmark_block(cfg, spec)
        settings = spec.hooks.extra_eval_configure(extra.name, bcfg)
        if settings is None:
            # not configured, no rows: what it recorded before (if anything) stays as it was
            context.log.warning(extra.how_to_configure)
            return _skipped(extra.how_to_configure)
        pub = load_export(store.data_dir / "exports", spec, bcfg["export_version"])
        if pub.items.empty:
            return _skipped(pub.note or f"the {spec.title} export has no items")
        items, _, split = select_items(spec, pub.items, None, bcfg["split"])
        b = cfg.get("bootstrap") or {}
        preds, scores, figures = spec.hooks.extra_eval_evaluate(
            extra.name, spec, items, split, settings, int(b.get("n", 1000)), int(b.get("seed", 0))
        )
        for frame in (preds, scores):
            if len(frame):
                frame["export_version"] = pub.version
        if len(preds):
            preds = preds.assign(n_images=0, cached=False)
        md = {**figures, "export_version": pub.version, "split": split}
        part = f"{extra.model}__{spec.name}"
        return publish(
            store, {t: {part: f} for t, f in zip(TABLES, (preds, scores), strict=True)}, metadata=md, started=t0
        )

    return _asset


def baseline_defs(specs: tuple[BenchmarkSpec, ...] | None = None) -> dg.Definitions:
    specs = specs if specs is not None else registry.specs()
    return dg.Definitions(assets=[_extra_eval_asset(s, e) for s in specs for e in s.eval.extra_evals])
