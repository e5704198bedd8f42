"""Paper baselines that are not models of config/models.yaml: MAIA's unimodal baseline
(forge/evals/unimodal.py), model ``unimodal`` on the leaderboard (part ``unimodal__maia``)."""

# No `from __future__ import annotations`: Dagster reads the `context` annotation at definition time.
import time

import dagster as dg

from assets.common import contract_check_specs, publish, table_metadata
from forge.benchmarks.registry import resolve
from forge.evals import unimodal as um
from forge.evals.config import benchmark_block, load_eval_config
from forge.evals.pipeline import load_export, select_items
from resources.storage import StorageResource

VERSION = "unimodal-1"
NAME = "maia_unimodal_eval"


def _skipped(why: str) -> dg.MaterializeResult:
    """Nothing evaluated, nothing written: the contract checks hold on the unchanged tables."""
    checks = [
        dg.AssetCheckResult(check_name=f"contract_{t}", passed=True, metadata={"skipped": why})
        for t in ("eval_predictions", "eval_scores")
    ]
    return dg.MaterializeResult(metadata={"skipped": why}, check_results=checks)


def baseline_defs() -> dg.Definitions:
    spec = resolve("maia")  # the one lookup: the asset passes the spec down

    @dg.asset(
        name=NAME,
        group_name="evals",
        kinds={"python"},
        deps=[dg.AssetDep("maia_export")],
        code_version=VERSION,
        check_specs=contract_check_specs(NAME, ["eval_predictions", "eval_scores"]),
        metadata=table_metadata(["eval_predictions", "eval_scores"]),
        description="MAIA §4.3 unimodal baseline: each true/false statement pair of the exported test items "
        "scored by local causal LMs (minicons, mean token log-probability, App. B); the more probable "
        "statement over all configured models is the answer. Model `unimodal`, setting `text_only`, on the "
        "leaderboard (primary: pool consistency, Table 1). Skipped with a message when no local model is "
        "configured (`benchmarks.maia.unimodal.models` or SUBTEXT_MAIA_UNIMODAL_MODELS).",
    )
    def _asset(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        store = storage.store
        cfg = load_eval_config()
        bcfg = benchmark_block(cfg, spec)
        ucfg = um.unimodal_config(bcfg.get("unimodal"))
        if ucfg is None:
            # no model, no rows: the recorded baseline (if any) stays as it was
            context.log.warning(um.HOW_TO_CONFIGURE)
            return _skipped(um.HOW_TO_CONFIGURE)
        pub = load_export(store.data_dir / "exports", spec, bcfg["export_version"])
        if pub.items.empty:
            return _skipped(pub.note or "the MAIA export has no items")
        items, _, split = select_items(spec, pub.items, None, bcfg["split"])
        b = cfg.get("bootstrap") or {}
        preds = um.unimodal_predictions(items.assign(split=split), ucfg)
        scores = um.unimodal_scores(spec, preds, items, int(b.get("n", 1000)), int(b.get("seed", 0)))
        for frame in (preds, scores):
            if len(frame):
                frame["export_version"] = pub.version
        if len(preds):
            preds = preds.assign(n_images=0, cached=False)
        part = f"{um.MODEL}__maia"
        md = {
            "models": ", ".join(ucfg.models),
            "pairs": len(preds),
            "export_version": pub.version,
            "split": split,
        }
        if len(scores):
            main = scores[(scores["slice"] == "all")].set_index("metric")["value"]
            md.update({f"{m}": float(main[m]) for m in ("sv_accuracy", "pool_consistency") if m in main})
        return publish(
            store,
            {"eval_predictions": {part: preds}, "eval_scores": {part: scores}},
            metadata=md,
            started=t0,
        )

    return dg.Definitions(assets=[_asset])
