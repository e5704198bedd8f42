"""The judge checked against people (docs/review.md "Judge validation"; forge/evals/judge_validation.py),
per benchmark with an LLM judge:

* ``<name>_judge_tasks``: a seeded sample of the models' judged open-ended answers, pushed to the
  benchmark's judge-validation project in Label Studio (people give the judge's verdict, blind to it);
* ``<name>_judge_validation`` (tables ``judge_ratings`` and ``judge_agreement``, file ``<name>``):
  their verdicts read back, Fleiss' kappa between people and with the judge, each person's Cohen's
  kappa with the judge; the card and the eval report show them.
"""

# No `from __future__ import annotations`: Dagster reads the `context` annotation at definition time.
import time

import dagster as dg
import pandas as pd

from assets.common import contract_check_specs, publish, table_metadata
from assets.review.factory import md_values, server_down
from forge.benchmarks import registry
from forge.benchmarks.spec import BenchmarkSpec
from forge.evals import judge_validation as jv
from forge.evals.config import benchmark_block, load_eval_config
from forge.evals.pipeline import load_export
from forge.people.client import ReviewServerDown
from resources.review import ReviewResource
from resources.storage import StorageResource

TABLES = ["judge_ratings", "judge_agreement"]


def _preds(store, spec: BenchmarkSpec) -> pd.DataFrame:
    if not store.exists("eval_predictions"):
        return pd.DataFrame()
    cols = ["model", "setting", "item_id", "variant", "task", "judge_ok", "judge_json", "judge_model", "parsed"]
    cols += ["status", "raw_reply", "detail"]
    return store.read("eval_predictions", where="benchmark = ?", params=[spec.name], columns=cols)


def judge_validation_defs(spec: BenchmarkSpec) -> list:
    tasks_key, read_key = spec.asset("judge_tasks"), spec.asset("judge_validation")

    @dg.asset(
        name=tasks_key,
        group_name="evals",
        kinds={"python"},
        deps=[dg.AssetDep(spec.asset("eval"))],
        description=f"Pushes a seeded sample of the models' judged open-ended {spec.title} answers to a Label Studio "
        "project where two or more people give the judge's verdict, blind to it (judge_validation in the paper's "
        "evals.yaml). Start the tool with `make review`.",
    )
    def _tasks(
        context: dg.AssetExecutionContext, storage: StorageResource, review: ReviewResource
    ) -> dg.MaterializeResult:
        store = storage.store
        cfg = load_eval_config()
        items = load_export(store.data_dir / "exports", spec, benchmark_block(cfg, spec)["export_version"]).items
        try:
            md = jv.run_judge_tasks(review.client(store.data_dir), spec, _preds(store, spec), items, cfg)
        except ReviewServerDown as exc:
            md = {"note": server_down(spec, exc, context)}
        return dg.MaterializeResult(metadata=md_values(md))

    @dg.asset(
        name=read_key,
        group_name="evals",
        kinds={"python"},
        deps=[tasks_key],
        check_specs=contract_check_specs(read_key, TABLES),
        metadata=table_metadata(TABLES),
        description=f"People's verdicts on the sampled {spec.title} answers read back: Fleiss' kappa between the "
        "people and with the LLM judge, each person's Cohen's kappa with the judge (as MAIA §4.2 reports 0.82); "
        "on the card and in the eval report.",
    )
    def _read(
        context: dg.AssetExecutionContext, storage: StorageResource, review: ReviewResource
    ) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        store = storage.store
        cfg = load_eval_config()
        preds = _preds(store, spec)
        try:
            ratings = jv.read_ratings(review.client(store.data_dir), spec, preds, cfg)
        except ReviewServerDown as exc:  # the recorded figures stay as they are
            note = server_down(spec, exc, context)
            tables = {t: store.read(t, parts=[spec.name]) for t in TABLES}
            return publish(store, {t: {spec.name: f} for t, f in tables.items()}, metadata={"note": note}, started=t0)
        s = jv.settings(spec, cfg)
        fig = jv.agreement(ratings, jv.labels(jv.judge_prompt(spec), s["field"]), s["raters"])
        judges = sorted(preds["judge_model"].dropna().astype(str).unique()) if "judge_model" in preds else []
        rows = jv.agreement_rows(spec, fig, ", ".join(judges) or None)
        md = {k: v for k, v in fig.items() if k != "labels"} | {"ratings": len(ratings)}
        return publish(
            store,
            {"judge_ratings": {spec.name: ratings}, "judge_agreement": {spec.name: rows}},
            metadata=md_values(md),
            started=t0,
        )

    return [_tasks, _read]


def judge_defs() -> dg.Definitions:
    return dg.Definitions(
        assets=[a for spec in registry.specs() if spec.eval.judge_prompt for a in judge_validation_defs(spec)]
    )
