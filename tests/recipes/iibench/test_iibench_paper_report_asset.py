"""II-Bench's paper report as a Dagster asset (issue 46; moved from tests/evals/test_paper_report_assets.py,
beside the paper's tests): it reads eval_scores, writes its Markdown into the export folder and shows
it as metadata, each cell against the paper's value with the n behind it."""

from __future__ import annotations

import dagster as dg
import pandas as pd

from assets.common import publish
from assets.evals.paper_reports import paper_report_defs
from forge.benchmarks.registry import resolve
from resources.storage import StorageResource


def _assets(defs: dg.Definitions, name: str):
    return next(a for a in defs.assets if name in {k.to_user_string() for k in a.keys})


def test_iibench_paper_report_asset(tmp_path):
    storage = StorageResource(data_dir=str(tmp_path))
    scores = pd.DataFrame(
        [
            {
                "model": "GPT-4o",
                "benchmark": "iibench",
                "setting": "none",
                "metric": "accuracy",
                "slice": "all",
                "value": 0.7264,
                "ci_low": 0.7,
                "ci_high": 0.75,
                "n": 10,
                "coverage": 1.0,
                "primary": True,
                "export_version": "v1",
                "split": "test",
                "backend": "openai",
            },
        ]
    )
    publish(storage.store, {"eval_scores": {"GPT-4o__iibench": scores}})
    defs = paper_report_defs((resolve("iibench"),))
    res = dg.materialize([_assets(defs, "iibench_paper_report")], resources={"storage": storage}, raise_on_error=True)
    md = res.asset_materializations_for_node("iibench_paper_report")[0].metadata
    path = tmp_path / "exports" / "iibench" / "paper_report" / "paper_report.md"
    assert path.is_file() and md["path"].value == str(path)
    assert "| GPT-4o | 72.6 (paper 72.6, Δ +0.0) · n=10 |" in md["report"].value  # the n behind the cell
    assert "- Overall: n = 10 here, 1399 in the paper's header" in md["report"].value
    assert md["cells_flagged"].value == 0
