"""ViMU's figures drawn from the predictions (Figs. 7 and 10, logic/error_analysis.py), by hand, and
in the paper report through the hook its spec declares (``PaperHooks.paper_figures``)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd

from assets.evals.paper_reports import build_paper_report
from assets.recipes.vimu.logic import error_analysis as ea
from forge.benchmarks.hooks import PaperHooks
from forge.benchmarks.registry import resolve


def _vimu_preds():
    # two models, RM items with gold sets; m1 over-selects B, m2 misses A; guided m1 stops choosing B
    gold = [["A"], ["A", "C"], ["D"], ["E"]]
    picks = {
        ("m1", "unguided"): [["A", "B"], ["A", "B", "C"], ["B", "D"], ["E"]],
        ("m2", "unguided"): [[], ["C"], ["D"], ["E"]],
        ("m1", "guided"): [["A"], ["A", "C"], ["D"], ["B"]],
        ("m3", "unguided"): [["A"], ["A"], ["D"], []],
    }
    rows = []
    for (model, setting), sets in picks.items():
        for task in ("RM", "SV"):
            for k, (g, p) in enumerate(zip(gold, sets)):
                rows.append(
                    {
                        "model": model,
                        "setting": setting,
                        "category": task,
                        "item_id": f"{task}{k}",
                        "variant": 0,
                        "detail": json.dumps({"gold_set": g, "pred_set": p}),
                    }
                )
    return pd.DataFrame(rows)


def test_vimu_fig10_delta_fpr_by_hand():
    rates = ea.option_error_rates(_vimu_preds())
    d = ea.delta_fpr(rates)
    assert set(d["model"]) == {"m1"}  # only m1 ran both settings
    b = d[(d["task"] == "RM") & (d["option"] == "B")].iloc[0]
    # B is never gold (4 negatives): unguided m1 picks B 3×, guided once → 0.75 → 0.25
    assert math.isclose(b["fpr_unguided"], 0.75) and math.isclose(b["fpr_guided"], 0.25)
    assert math.isclose(b["delta_fpr"], -0.5)
    m2a = rates[(rates["model"] == "m2") & (rates["task"] == "RM") & (rates["option"] == "A")].iloc[0]
    assert math.isclose(m2a["fnr"], 1.0) and math.isclose(m2a["fpr"], 0.0)  # A gold twice, never picked


def test_vimu_failed_call_counts_with_the_rows_gold():
    # a failed call: no parsed sets in detail, gold "A, C" on the row, an empty selection
    p = pd.DataFrame(
        [
            {
                "model": "m",
                "setting": "unguided",
                "category": "RM",
                "item_id": "x",
                "variant": 0,
                "gold": "A, C",
                "detail": "{}",
            },
            {
                "model": "m",
                "setting": "unguided",
                "category": "RM",
                "item_id": "y",
                "variant": 0,
                "gold": "B",
                "detail": json.dumps({"gold_set": ["B"], "pred_set": ["A", "B"]}),
            },
        ]
    )
    r = ea.option_error_rates(p).set_index(["task", "option"])
    assert r.loc[("RM", "A"), "fnr"] == 1.0 and r.loc[("RM", "A"), "fpr"] == 1.0  # missed on x, extra on y
    assert r.loc[("RM", "C"), "positives"] == 1 and r.loc[("RM", "B"), "negatives"] == 1


def test_vimu_fig7_pca_by_hand(tmp_path):
    rates = ea.option_error_rates(_vimu_preds())
    sig = ea.error_signatures(rates)
    # B is never gold: its FNR is undefined for everyone and dropped (2 tasks × 1), 18 features left
    assert list(sig.index) == ["m1", "m2", "m3"] and sig.shape[1] == 18 and "RM_B_fnr" not in sig
    coords, share = ea.signature_pca(sig)
    x = sig.to_numpy() - sig.to_numpy().mean(axis=0)
    eig = np.sort(np.linalg.eigvalsh(x.T @ x))[::-1]
    assert math.isclose(share[0], eig[0] / eig.sum(), rel_tol=1e-9)
    # PC1 coordinates reproduce the projection on the top eigenvector (up to sign)
    w = np.linalg.eigh(x.T @ x)[1][:, -1]
    assert np.allclose(np.abs(coords["pc1"].to_numpy()), np.abs(x @ w))
    text, paths = ea.paper_figures(_vimu_preds(), tmp_path)
    assert {p.name for p in paths} == {"fig7_error_signature_pca.png", "fig10_delta_fpr.png"}
    assert all(p.stat().st_size > 0 for p in paths) and "Fig. 10" in text


def test_the_report_draws_the_figures_its_spec_declares(tmp_path):
    spec = resolve("vimu")
    assert spec.hooks.paper_figures is ea.paper_figures
    scores = pd.DataFrame(columns=["model", "setting", "metric", "slice", "value"])
    out = build_paper_report(spec, scores, _vimu_preds(), tmp_path / "with")
    assert "## Figures from the predictions" in out["markdown"] and "Fig. 10" in out["markdown"]
    assert {p.name for p in out["figures"]} >= {"fig7_error_signature_pca.png", "fig10_delta_fpr.png"}

    # the same paper without the hook: no figure from the predictions
    class Bare(type(spec.hooks)):
        paper_figures = PaperHooks.paper_figures  # the shared behaviour: none

    bare = replace(spec, hooks=Bare())
    out = build_paper_report(bare, scores, _vimu_preds(), tmp_path / "without")
    assert "## Figures from the predictions" not in out["markdown"]
    assert not any(p.name.startswith(("fig7_", "fig10_")) for p in out["figures"])
