"""MAIA's unimodal baseline as the spec declares it (``EvalSpec.extra_evals``, logic/unimodal.py):
its asset skips with its configuration message when no model is configured, the paper report runs
after it, and its row sits in Table 1 beside the published figure."""

from __future__ import annotations

import math

import dagster as dg
import pandas as pd

from assets.evals.baselines import baseline_defs
from assets.evals.paper_reports import build_paper_report, paper_report_defs
from assets.recipes.maia.logic import unimodal as um
from forge.benchmarks.registry import resolve
from resources.storage import StorageResource


def _row(model, setting, metric, slice_, value):
    return {"model": model, "setting": setting, "metric": metric, "slice": slice_, "value": value}


def _asset(defs: dg.Definitions, name: str):
    return next(a for a in defs.assets if name in {k.to_user_string() for k in a.keys})


def test_the_spec_declares_the_baseline_and_the_report_runs_after_it():
    spec = resolve("maia")
    assert spec.eval.extra_evals == (um.UNIMODAL,)
    baseline = _asset(baseline_defs((spec,)), "maia_unimodal_eval")
    assert baseline.code_versions_by_key[dg.AssetKey("maia_unimodal_eval")] == "unimodal-1"
    assert {k.to_user_string() for k in baseline.dependency_keys} == {"maia_export"}
    report = _asset(paper_report_defs((spec,)), "maia_paper_report")
    assert {k.to_user_string() for k in report.dependency_keys} == {"maia_eval", "maia_unimodal_eval"}


def test_unimodal_skipped_without_a_model(tmp_path, monkeypatch):
    monkeypatch.delenv(um.ENV_MODELS, raising=False)
    res = dg.materialize(
        [_asset(baseline_defs(), "maia_unimodal_eval")],
        resources={"storage": StorageResource(data_dir=str(tmp_path))},
        raise_on_error=True,
    )
    md = res.asset_materializations_for_node("maia_unimodal_eval")[0].metadata
    assert md["skipped"].value == um.HOW_TO_CONFIGURE


def test_maia_unimodal_row_and_unknown_setting(tmp_path):
    scores = pd.DataFrame([_row("unimodal", "text_only", "pool_consistency", "all", 0.054)])
    out = build_paper_report(resolve("maia"), scores, None, tmp_path)
    c = out["cells"]["table1"]
    u = c[(c["model"] == "unimodal") & (c["column"] == "Avg.") & c["reason"].isna()].iloc[0]
    assert u["setting"] == "text_only" and math.isclose(u["diff"], 0.004) and not u["flag"]
