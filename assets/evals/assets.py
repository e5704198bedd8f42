"""Evaluation assets (docs/evals.md), one pair per registered benchmark.

``<name>_eval``: partitioned by model (a ``StaticPartitionsDefinition`` built at load from
config/models.yaml: adding a model = one YAML entry + reload + a backfill of its partition);
evaluates the gated, exported items of the configured export version (``export_version``
in config/evals.yaml, default ``latest``) under every setting of the benchmark, writes
``eval_predictions`` and ``eval_scores`` (partition ``<model>__<name>``, both naming the
export version). Check ``eval_not_empty`` warns when the evaluated split is empty or nothing
was scored. ``<name>_eval_report``: unpartitioned fan-in over models; markdown tables and
PNG plots (data/reports/<name>/) in its metadata.
"""

# No `from __future__ import annotations`: Dagster reads the `context` annotation at definition time.
import base64
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dagster as dg
import pandas as pd

from assets.automation import REPORT
from assets.common import (
    SINGLE_RUN,
    contract_check_specs,
    partition_keys,
    publish,
    table_metadata,
    table_preview,
)
from assets.llm_support import llm_metadata, outdated_prompt_check, record_llm_calls
from forge.benchmarks import registry
from forge.benchmarks.spec import BenchmarkSpec
from forge.evals import report as rp
from forge.evals.config import benchmark_block, load_eval_config, load_models
from forge.evals.pipeline import evaluate, load_export, model_engine, prompt_files
from forge.evals.scoring import baseline_scores
from forge.provenance.versioning import content_hash
from forge.storage import register_view
from forge.storage.contracts import load_contract
from resources.embedder import EmbedderResource
from resources.llm import LLMResource
from resources.storage import StorageResource

VERSION = "evals-2"
NOT_EMPTY_CHECK = "eval_not_empty"
MODELS_AT_ONCE = 8  # model partitions of one run evaluated concurrently
# Leaderboard: each model's primary metric per benchmark × export version × setting, ranked (stub
# rows flagged): rows measured on different export versions (other items) are never ranked together,
# and the share of items that got a score sits beside each.
register_view(
    "leaderboard",
    """
select benchmark, export_version, setting, metric, model, value, ci_low, ci_high, n, coverage, split, backend,
       rank() over (partition by benchmark, export_version, setting order by value desc nulls last) as rank
from eval_scores where "primary" and slice = 'all'
order by benchmark, export_version, setting, rank""",
)


def build_defs(
    models_path: str | Path | None = None,
    cfg_path: str | Path | None = None,
    specs: tuple[BenchmarkSpec, ...] | None = None,
) -> dg.Definitions:
    models = load_models(models_path)
    cfg = load_eval_config(cfg_path)
    partitions = dg.StaticPartitionsDefinition([m.name for m in models] or ["none"])
    by_name = {m.name: m for m in models}
    assets, checks = [], []
    for spec in specs if specs is not None else registry.specs():
        files = prompt_files(spec, cfg)
        assets.append(_eval_asset(spec, partitions, by_name, cfg, files))
        assets.append(_report_asset(spec))
        checks.append(
            # eval_predictions holds every benchmark's rows: only this one's count against its prompts
            outdated_prompt_check(
                spec.asset("eval"),
                "eval_predictions",
                files,
                name=f"prompt_current_{spec.asset('eval')}",
                only={"benchmark": spec.name},
            )
        )
    return dg.Definitions(assets=assets, asset_checks=checks)


def _eval_asset(spec: BenchmarkSpec, partitions, by_name, cfg, files):
    name = spec.asset("eval")
    bcfg = benchmark_block(cfg, spec)

    @dg.asset(
        name=name,
        group_name="evals",
        partitions_def=partitions,
        backfill_policy=SINGLE_RUN,
        pool="llm",
        kinds={"openai", "python"},
        # What is evaluated is what was published: the gated, exported items.
        deps=[dg.AssetDep(spec.asset("export"))],
        code_version=content_hash(
            VERSION,
            {
                "cfg": bcfg,
                "circular": cfg.get("circular"),
                "bootstrap": cfg.get("bootstrap"),
                # the requests' order of parts and the slices' labels: a change re-evaluates
                "part_order": {k: [o.images.value, o.source] for k, o in sorted(spec.eval.part_order.items())},
                "multi_label": list(spec.eval.multi_label),
            },
            files=files,
        ),
        check_specs=contract_check_specs(name, ["eval_predictions", "eval_scores"])
        + [
            dg.AssetCheckSpec(
                NOT_EMPTY_CHECK,
                asset=name,
                description="The evaluated split of the export has items and every model partition "
                "scored at least one; fails (warn) otherwise.",
            )
        ],
        metadata=table_metadata(["eval_predictions", "eval_scores"]),
        description=f"Evaluate one model (partition) on the exported {spec.title} items (export version "
        f"`{bcfg['export_version']}`, split `{bcfg['split']}`) under every setting; predictions with raw "
        "replies, scores with cluster-bootstrap CIs.",
    )
    def _asset(
        context: dg.AssetExecutionContext, llm: LLMResource, storage: StorageResource, embedder: EmbedderResource
    ) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        store = storage.store
        pub = load_export(store.data_dir / "exports", spec, bcfg["export_version"])
        items = pub.items
        judge = llm.engine() if spec.eval.judge_prompt else None
        emb = embedder.embedder() if spec.eval.similarity and len(items) else None
        descriptions = {}
        if spec.hooks.overrides("descriptions") and len(items):
            evidence = store.read("evidence", where="unit = 'frame'") if store.exists("evidence") else pd.DataFrame()
            descriptions = spec.hooks.descriptions(items, evidence)
        preds_parts, score_parts = {}, {}
        md = {"export_version": pub.version or "none", "split": bcfg["split"]}
        if pub.path is not None:
            md["export_path"] = dg.MetadataValue.path(str(pub.path))
        if pub.note:
            md["note"] = pub.note
        if pub.forced_stub:
            md["export_warning"] = "this export was forced with stub items: scores are meaningless"
        empty: dict[str, str] = {}
        per_model: dict[str, dict] = {}

        def run_model(key: str):
            model = by_name[key]
            engine = model_engine(model, llm.settings(), llm.resolved_cache_path(), llm.prices)
            if items.empty:
                return engine, pd.DataFrame(), pd.DataFrame(), {"items": 0, "scored_items": 0}
            preds, scores, meta = evaluate(
                spec, model, cfg, items, None, store.data_dir, engine, judge, emb, descriptions, context.log
            )
            return engine, preds, scores, meta

        keys = partition_keys(context)
        # The models of one run are evaluated at once: each has its own endpoint and engine budget,
        # so one model's slow replies (a long tail, a stalled server) never hold up the others.
        with ThreadPoolExecutor(max_workers=max(1, min(len(keys), MODELS_AT_ONCE)), thread_name_prefix="eval") as ex:
            done = list(ex.map(run_model, keys))
        for key, (engine, preds, scores, meta) in zip(keys, done):
            model = by_name[key]
            for frame in (preds, scores):
                if len(frame):
                    frame["export_version"] = pub.version
            part = f"{key}__{spec.name}"
            preds_parts[part], score_parts[part] = preds, scores
            # the table's part is not the partition key: say per model what it holds
            per_model[key] = {
                "dagster/row_count": len(preds),
                "eval_scores/rows": len(scores),
                "preview": table_preview(preds, load_contract("eval_predictions")),
                "eval_scores/preview": table_preview(scores, load_contract("eval_scores")),
                "run": dg.MetadataValue.json(meta),
            }
            md[f"{key}/model"] = dg.MetadataValue.json(model.describe())
            md[f"{key}/run"] = dg.MetadataValue.json(meta)
            if not meta.get("items"):
                empty[key] = f"split `{bcfg['split']}` of export {pub.version or '(none)'} has no items"
            elif not meta.get("scored_items"):
                empty[key] = "no item was scored"
            if model.backend == "stub":
                md[f"{key}/warning"] = "offline stub model: replies are placeholders, scores are meaningless"
            if len(scores):
                md[f"{key}/scores"] = dg.MetadataValue.md(
                    rp.main_table(scores[scores["primary"] | (scores["metric"] == "success_rate")])
                )
            record_llm_calls(store, engine)
        # baselines a scorer computed next to the models (e.g. a random Classification baseline) are
        # models of their own on the leaderboard, like `human`: part `<baseline>__<benchmark>`
        done_scores = [f for f in score_parts.values() if len(f)]
        for name, rows in baseline_scores(pd.concat(done_scores) if done_scores else pd.DataFrame()).items():
            score_parts[f"{name}__{spec.name}"] = rows
        if judge is not None:
            record_llm_calls(store, judge)
            md.update({f"judge_{k}": v for k, v in llm_metadata(judge).items()})
        res = publish(
            store,
            {"eval_predictions": preds_parts, "eval_scores": score_parts},
            metadata=md,
            started=t0,
            context=context,
            part_metadata=per_model,
        )
        check = dg.AssetCheckResult(
            check_name=NOT_EMPTY_CHECK,
            passed=not empty,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "export_version": pub.version or "none",
                "split": bcfg["split"],
                "empty_partitions": dg.MetadataValue.json(empty),
            },
        )
        return dg.MaterializeResult(
            metadata=res.metadata, check_results=[*res.check_results, check], data_version=res.data_version
        )

    return _asset


def _report_asset(spec: BenchmarkSpec):
    name = spec.asset("eval_report")
    bench = spec.name

    @dg.asset(
        name=name,
        group_name="evals",
        deps=[dg.AssetDep(spec.asset("eval"))],
        automation_condition=REPORT,
        kinds={"python"},
        description=f"{spec.title}: leaderboard tables over every evaluated model (with the export version and "
        f"coverage) and PNG plots under data/reports/{bench}/.",
    )
    def _asset(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
        store = storage.store
        scores = (
            store.read("eval_scores", where="benchmark = ?", params=[bench])
            if store.exists("eval_scores")
            else pd.DataFrame()
        )
        md: dict = {"models": int(scores["model"].nunique()) if len(scores) else 0}
        for table, render, key in (
            ("human_scores", rp.human_table, "human_baselines"),
            ("judge_agreement", rp.judge_table, "judge_validation"),
        ):
            if store.exists(table):  # people measured beside the models (docs/evals.md)
                md[key] = dg.MetadataValue.md(render(store.read(table, where="benchmark = ?", params=[bench])))
        if scores.empty:
            md["table"] = dg.MetadataValue.md("_no scores yet_")
            return dg.MaterializeResult(metadata=md)
        out_dir = store.data_dir / "reports" / bench
        md["export_versions"] = ", ".join(sorted(scores["export_version"].dropna().astype(str).unique())) or "none"
        md["primary"] = dg.MetadataValue.md(rp.main_table(scores[scores["primary"]]))
        md["success_rate"] = dg.MetadataValue.md(rp.main_table(scores, ["success_rate"]))
        if (scores["backend"] == "stub").any():
            md["warning"] = "some rows come from the offline stub model: their scores are meaningless"
        if spec.eval.judge_prompt:
            preds = store.read("eval_predictions", where="benchmark = ?", params=[bench], columns=["judge_error"])
            missing = int(preds["judge_error"].fillna("").str.startswith("judge_missing").sum()) if len(preds) else 0
            if missing:
                md["judge"] = (
                    f"JUDGE MISSING: {missing} open-ended answer(s) were not scored (the judge is the offline "
                    "stub, or the answers came from the stub model); configure an endpoint for the judge"
                )
        plots = []
        primary_metric = scores.loc[scores["primary"], "metric"].iloc[0] if scores["primary"].any() else None
        for metric, key in spec.eval.report_slices:
            md[f"{metric}_by_{key}"] = dg.MetadataValue.md(rp.slice_table(scores, metric, key))  # values with their n
            p = rp.bar_plot(scores, metric, key, out_dir / f"{metric}_by_{key}.png", f"{bench}: {metric} by {key}")
            if p:
                plots.append(p)
        for table, metrics in spec.eval.report_tables.items():
            chosen = list(metrics) or sorted(set(scores["metric"]) - {"success_rate"})  # () = every metric
            md[table] = dg.MetadataValue.md(rp.main_table(scores, chosen))
        if spec.hooks.overrides("report_plots") or spec.hooks.overrides("report_prediction_tables"):
            preds = store.read("eval_predictions", where="benchmark = ?", params=[bench])
            plots += spec.hooks.report_plots(scores, preds, out_dir)
            for table, frame in spec.hooks.report_prediction_tables(scores, preds).items():
                md[table] = dg.MetadataValue.md(frame.to_markdown(index=False))
        for p in plots:
            md[f"plot_{p.stem}"] = dg.MetadataValue.path(str(p))
        if plots and plots[0].stat().st_size < 60_000:  # one small inline preview
            b64 = base64.b64encode(plots[0].read_bytes()).decode()
            md["preview"] = dg.MetadataValue.md(f"![{plots[0].stem}](data:image/png;base64,{b64})")
        md["plots"] = len(plots)
        md["primary_metric"] = primary_metric or "–"
        return dg.MaterializeResult(metadata=md)

    return _asset
