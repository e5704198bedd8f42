"""``<paper>_paper_report``: each paper's own evaluation tables rebuilt from ``eval_scores``
(every model on the leaderboard a row, the human baseline where the paper has one) beside the
paper's published figures (``assets/recipes/<paper>/published.yaml``; forge/evals/paper_report.py).
Written to ``data/exports/<paper>/paper_report/paper_report.md`` (+ PNG figures) and shown as
asset metadata. What a paper adds is declared on its spec: the evaluations beside the models it
runs after (``EvalSpec.extra_evals``) and the figures it draws from the predictions
(``PaperHooks.paper_figures``)."""

# No `from __future__ import annotations`: Dagster reads the `context` annotation at definition time.
import importlib
from pathlib import Path

import dagster as dg
import pandas as pd

from assets.automation import REPORT
from forge.benchmarks import registry
from forge.benchmarks.spec import BenchmarkSpec
from forge.evals import paper_report as pr
from forge.evals.config import load_eval_config, settings_for
from forge.evals.pipeline import load_export
from forge.storage.trees import fetch_tree, publish_tree
from resources.storage import StorageResource


def published_path(spec: BenchmarkSpec) -> Path:
    return Path(importlib.import_module(spec.package).__file__).parent / "published.yaml"


def evaluated(store_dir: Path, spec: BenchmarkSpec, scores: pd.DataFrame) -> list[pr.Evaluated]:
    """What the scores were computed on: one ``Evaluated`` per export version they name."""
    if not len(scores) or "export_version" not in scores:
        return []
    out = []
    for version, g in scores.dropna(subset=["export_version"]).groupby("export_version", sort=True):
        pub = load_export(store_dir / "exports", spec, str(version))
        split = str(g["split"].iloc[0]) if "split" in g else "test"
        out.append(pr.evaluated_of(pub.items, str(version), split))
    return out


def build_paper_report(
    spec: BenchmarkSpec,
    scores: pd.DataFrame,
    preds: pd.DataFrame | None,
    out_dir: Path,
    what: list[pr.Evaluated] | None = None,
) -> dict:
    """The report's Markdown, cells and figure paths for one paper (no Dagster); ``what``: the
    export versions evaluated (``evaluated``)."""
    path = published_path(spec)
    paper = pr.load_published(path) if path.is_file() else pr.PaperTables((), pr.load_published_empty())
    extra = {s for e in spec.eval.extra_evals for s in e.settings}
    known = {s.name for s in settings_for(load_eval_config(), spec)} | extra
    md, cells = pr.paper_report(spec.title, paper, scores, known, what)
    paths: list[Path] = []
    if paper.figures:
        text, paths = pr.draw_figures(paper, cells, out_dir)
        md += "\n## Figures\n\n" + text + "\n"
    drawn = spec.hooks.paper_figures(preds, out_dir) if preds is not None and len(preds) else None
    if drawn is not None:  # None: the paper draws no figures from the predictions
        text, more = drawn
        paths += more
        md += "\n## Figures from the predictions\n\n" + text + "\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "paper_report.md").write_text(md, encoding="utf-8")
    return {"markdown": md, "cells": cells, "figures": paths, "path": out_dir / "paper_report.md"}


def _paper_report_asset(spec: BenchmarkSpec):
    name = spec.asset("paper_report")
    bench = spec.name

    @dg.asset(
        name=name,
        group_name="evals",
        deps=[dg.AssetDep(spec.asset("eval")), *[dg.AssetDep(spec.asset(e.name)) for e in spec.eval.extra_evals]],
        automation_condition=REPORT,
        kinds={"python"},
        description=f"{spec.title}: the paper's own tables (same rows, columns, aggregation and rounding) with every "
        f"evaluated model as a row, beside the published figures (published.yaml); "
        f"data/exports/{bench}/paper_report/paper_report.md.",
    )
    def _asset(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
        store = storage.store
        scores = (
            store.read("eval_scores", where="benchmark = ?", params=[bench])
            if store.exists("eval_scores")
            else pd.DataFrame(columns=["model", "setting", "metric", "slice", "value"])
        )
        preds = None
        if spec.hooks.overrides("paper_figures") and store.exists("eval_predictions"):
            preds = store.read(
                "eval_predictions",
                where="benchmark = ?",
                params=[bench],
                columns=["model", "setting", "category", "item_id", "variant", "gold", "detail"],
            )
        fetch_tree(store, f"exports/{bench}")  # on object storage: the exports another machine wrote
        what = evaluated(store.data_dir, spec, scores)
        out = build_paper_report(spec, scores, preds, store.data_dir / "exports" / bench / "paper_report", what)
        publish_tree(store, f"exports/{bench}/paper_report")  # on object storage: into the bucket (replaced)
        flagged = sum(int(c["flag"].sum()) for c in out["cells"].values() if len(c))
        md = {
            "report": dg.MetadataValue.md(out["markdown"]),
            "path": dg.MetadataValue.path(str(out["path"])),
            "models": int(scores["model"].nunique()) if len(scores) else 0,
            "cells_flagged": flagged,
            "evaluated": "; ".join(e.describe() for e in what) or "no export named by the scores",
        }
        for p in out["figures"]:
            md[f"figure_{p.stem}"] = dg.MetadataValue.path(str(p))
        if flagged:
            context.log.warning(f"{bench}: {flagged} cell(s) differ from the paper by more than its rounding")
        return dg.MaterializeResult(metadata=md)

    return _asset


def paper_report_defs(specs: tuple[BenchmarkSpec, ...] | None = None) -> dg.Definitions:
    return dg.Definitions(assets=[_paper_report_asset(s) for s in (specs if specs is not None else registry.specs())])
