"""Evaluation assets (docs/evals.md).

``<paper>_eval``: partitioned by model (a ``StaticPartitionsDefinition`` built at load from
config/models.yaml: adding a model = one YAML entry + reload + a backfill of its partition);
runs every setting of config/evals.yaml for the model, writes ``eval_predictions`` and
``eval_scores`` (partition ``<model>__<paper>``). ``<paper>_eval_report``: unpartitioned
fan-in over models; markdown tables and PNG plots (data/reports/<paper>/) in its metadata.
"""



import base64
import time
from pathlib import Path

import dagster as dg
import pandas as pd

from assets.common import SINGLE_RUN, contract_check_specs, partition_keys, publish, table_metadata
from assets.llm_support import llm_metadata, outdated_prompt_check, record_llm_calls
from forge.evals import report as rp
from forge.evals.config import BENCHMARKS, load_eval_config, load_models
from forge.evals.pipeline import evaluate, model_engine, prompt_files
from forge.evals.requests import as_list, jload
from forge.storage import register_view
from forge.versioning import content_hash
from resources.embedder import EmbedderResource
from resources.llm import LLMResource
from resources.storage import StorageResource

VERSION = "evals-1"
# Leaderboard: each model's primary metric per benchmark × setting, ranked (stub rows flagged).
register_view("leaderboard", """
select benchmark, setting, metric, model, value, ci_low, ci_high, n, coverage, split, backend,
       rank() over (partition by benchmark, setting order by value desc nulls last) as rank
from eval_scores where "primary" and slice = 'all'
order by benchmark, setting, rank""")


def _descriptions(store, items: pd.DataFrame) -> dict[str, str]:
    """Hummus §6.3 text for the image: a human image_description imported into the item's
    ``extra`` when present, else a literal description assembled from the vision stage's
    evidence for the frame (objects, people, on-screen text)."""
    out: dict[str, str] = {}
    ev = store.read("evidence", where="unit = 'frame'") if store.exists("evidence") else pd.DataFrame()
    ev_by = {r["unit_id"]: r for r in ev.to_dict("records")} if len(ev) else {}
    for r in items.to_dict("records"):
        desc = jload(r.get("extra")).get("image_description")
        if not desc and r.get("unit_id") in ev_by:
            e = ev_by[r["unit_id"]]
            parts = []
            tags = as_list(e.get("tags"))
            if tags:
                parts.append("The image shows " + ", ".join(map(str, tags[:10])) + ".")
            if int(e.get("persons") or 0):
                parts.append(f"{int(e['persons'])} person(s) are visible.")
            if e.get("ocr_text"):
                parts.append(f"Text in the image: \"{str(e['ocr_text'])[:200]}\".")
            desc = " ".join(parts)
        if desc:
            out[r["item_id"]] = desc
    return out


def build_defs(models_path: str | Path | None = None, cfg_path: str | Path | None = None) -> dg.Definitions:
    models = load_models(models_path)
    cfg = load_eval_config(cfg_path)
    partitions = dg.StaticPartitionsDefinition([m.name for m in models] or ["none"])
    by_name = {m.name: m for m in models}
    assets, checks = [], []
    for bench in BENCHMARKS:
        files = prompt_files(bench, cfg)
        assets.append(_eval_asset(bench, partitions, by_name, cfg, files, models_path))
        assets.append(_report_asset(bench))
        checks.append(outdated_prompt_check(f"{bench}_eval", "eval_predictions", files, name=f"prompt_current_{bench}_eval"))
    return dg.Definitions(assets=assets, asset_checks=checks)


def _eval_asset(bench, partitions, by_name, cfg, files, models_path):
    name = f"{bench}_eval"

    @dg.asset(
        name=name, group_name="evals", partitions_def=partitions, backfill_policy=SINGLE_RUN, pool="llm",
        kinds={"openai", "python"},
        # Splits first: evaluation runs on the test split when the benchmark has one.
        deps=[dg.AssetDep(f"{bench}_items", partition_mapping=dg.AllPartitionMapping()), dg.AssetDep(f"{bench}_splits")],
        code_version=content_hash(VERSION, {"cfg": cfg["benchmarks"][bench], "circular": cfg.get("circular"),
                                            "bootstrap": cfg.get("bootstrap")}, files=files),
        check_specs=contract_check_specs(name, ["eval_predictions", "eval_scores"]),
        metadata=table_metadata(["eval_predictions", "eval_scores"]),
        description=f"Evaluate one model (partition) on {bench}_items under every {bench} setting of config/evals.yaml; "
                    "predictions with raw replies, scores with cluster-bootstrap CIs.",
    )
    def _asset(context: dg.AssetExecutionContext, llm: LLMResource, storage: StorageResource,
               embedder: EmbedderResource) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        store = storage.store
        items = store.read(f"{bench}_items")
        splits = store.read("splits") if store.exists("splits") else None
        judge = llm.engine() if bench in ("vimu", "maia") else None
        emb = embedder.embedder() if bench in ("hummus", "maia") and len(items) else None
        descriptions = _descriptions(store, items) if bench == "hummus" and len(items) else {}
        preds_parts, score_parts, md = {}, {}, {}
        engines = []
        for key in partition_keys(context):
            spec = by_name[key]
            engine = model_engine(spec, llm.settings(), llm.resolved_cache_path(), llm.prices)
            engines.append(engine)
            if items.empty:
                preds, scores, meta = pd.DataFrame(), pd.DataFrame(), {"items": 0}
            else:
                preds, scores, meta = evaluate(bench, spec, cfg, items, splits, store.data_dir, engine, judge, emb,
                                               descriptions, context.log)
            part = f"{key}__{bench}"
            preds_parts[part], score_parts[part] = preds, scores
            md[f"{key}/model"] = dg.MetadataValue.json(spec.describe())
            md[f"{key}/run"] = dg.MetadataValue.json(meta)
            if spec.backend == "stub":
                md[f"{key}/warning"] = "offline stub model: replies are placeholders, scores are meaningless"
            if len(scores):
                md[f"{key}/scores"] = dg.MetadataValue.md(rp.main_table(scores[scores["primary"] | (scores["metric"] == "success_rate")]))
            record_llm_calls(store, engine)
        if judge is not None:
            record_llm_calls(store, judge)
            md.update({f"judge_{k}": v for k, v in llm_metadata(judge).items()})
        return publish(store, {"eval_predictions": preds_parts, "eval_scores": score_parts}, metadata=md, started=t0)

    return _asset


def _report_asset(bench):
    name = f"{bench}_eval_report"

    @dg.asset(name=name, group_name="evals", deps=[dg.AssetDep(f"{bench}_eval")], kinds={"python"},
              description=f"{bench}: leaderboard tables over every evaluated model and PNG plots under data/reports/{bench}/.")
    def _asset(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
        store = storage.store
        scores = store.read("eval_scores", where=f"benchmark = '{bench}'") if store.exists("eval_scores") else pd.DataFrame()
        md: dict = {"models": int(scores["model"].nunique()) if len(scores) else 0}
        if scores.empty:
            md["table"] = dg.MetadataValue.md("_no scores yet_")
            return dg.MaterializeResult(metadata=md)
        out_dir = store.data_dir / "reports" / bench
        md["primary"] = dg.MetadataValue.md(rp.main_table(scores[scores["primary"]]))
        md["success_rate"] = dg.MetadataValue.md(rp.main_table(scores, ["success_rate"]))
        if (scores["backend"] == "stub").any():
            md["warning"] = "some rows come from the offline stub model: their scores are meaningless"
        if bench in ("vimu", "maia"):
            preds = store.read("eval_predictions", where=f"benchmark = '{bench}'", columns=["judge_error"])
            missing = int(preds["judge_error"].fillna("").str.startswith("judge_missing").sum()) if len(preds) else 0
            if missing:
                md["judge"] = (f"JUDGE MISSING: {missing} open-ended answer(s) were not scored (the judge is the offline "
                               "stub, or the answers came from the stub model); configure an endpoint for the judge")
        plots = []
        primary_metric = scores.loc[scores["primary"], "metric"].iloc[0] if scores["primary"].any() else None
        slice_keys = {"iibench": [("accuracy", k) for k in ("domain", "emotion", "image_type", "difficulty", "rhetoric")],
                      "vague": [("accuracy", "category")], "maia": [("sv_accuracy", "category"), ("oe_accuracy", "category")],
                      "vimu": [], "hummus": []}[bench]
        for metric, key in slice_keys:
            p = rp.bar_plot(scores, metric, key, out_dir / f"{metric}_by_{key}.png", f"{bench}: {metric} by {key}")
            if p:
                plots.append(p)
        if bench == "vimu":
            md["tasks"] = dg.MetadataValue.md(rp.main_table(scores, ["OE", "EG", "RM", "SV", "SSU-Avg", "All-Avg"]))
            preds = store.read("eval_predictions", where="benchmark = 'vimu'")
            plots += rp.vimu_plots(scores, preds, out_dir)
        if bench == "vague":
            md["errors"] = dg.MetadataValue.md(rp.main_table(scores, ["errors_FS", "errors_SU", "errors_NE"]))
        if bench == "maia":
            md["all_metrics"] = dg.MetadataValue.md(rp.main_table(scores, ["sv_accuracy", "pool_consistency", "oe_accuracy",
                                                                           "rouge_l", "embedding_similarity", "agg_accuracy"]))
        if bench == "hummus":
            md["all_metrics"] = dg.MetadataValue.md(rp.main_table(scores, sorted(set(scores["metric"]) - {"success_rate"})))
        for p in plots:
            md[f"plot_{p.stem}"] = dg.MetadataValue.path(str(p))
        if plots and plots[0].stat().st_size < 60_000:   # one small inline preview
            b64 = base64.b64encode(plots[0].read_bytes()).decode()
            md["preview"] = dg.MetadataValue.md(f"![{plots[0].stem}](data:image/png;base64,{b64})")
        md["plots"] = len(plots)
        md["primary_metric"] = primary_metric or "–"
        return dg.MaterializeResult(metadata=md)

    return _asset
