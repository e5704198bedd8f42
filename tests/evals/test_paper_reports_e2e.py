"""End to end on the evaluation fixture (tests/evals/test_e2e.py): two models served by the LLM
double on all five benchmarks, MAIA's unimodal baseline with a tiny causal LM made in the test,
then the five paper reports: every table has the evaluated models as rows, every column names a
metric the scorers really write, every cell equals its eval_scores value, and `unimodal` is on
the leaderboard and in MAIA's Table 1."""

from __future__ import annotations

import math
import re

import dagster as dg

from assets.evals.baselines import baseline_defs
from assets.evals.paper_reports import paper_report_defs, published_path
from assets.recipes.maia.logic import unimodal as um
from forge.benchmarks.registry import resolve
from forge.evals import paper_report as pr
from forge.storage import open_catalog, refresh_catalog
from tests.evals.test_e2e import published, setup  # noqa: F401  (the fixtures)
from tests.recipes.maia.test_maia_unimodal import _tiny_lm

PAPERS = ("iibench", "vimu", "vague", "maia", "hummus")


def test_paper_reports_from_evaluated_models(setup, tmp_path, monkeypatch):
    defs, resources, store, _ = setup
    evals = [a for a in defs.assets if a.key.to_user_string().endswith("_eval")]
    for model in ("m-good", "m-bad"):
        assert dg.materialize(evals, partition_key=model, resources=resources, selection=evals).success
    _tiny_lm(tmp_path / "lm", seed=3)
    monkeypatch.setenv(um.ENV_MODELS, str(tmp_path / "lm"))
    res = dg.materialize(baseline_defs().assets, resources={"storage": resources["storage"]})
    assert res.success
    reports = paper_report_defs().assets
    res = dg.materialize(reports, resources={"storage": resources["storage"]})
    assert res.success

    scores = store.read("eval_scores")
    refresh_catalog(store)
    with open_catalog(store) as con:
        lb = con.sql("select * from leaderboard where benchmark = 'maia' and setting = 'text_only'").df()
    assert lb["model"].tolist() == ["unimodal"] and lb["metric"].tolist() == ["pool_consistency"]

    for name in PAPERS:
        spec = resolve(name)
        md = res.asset_materializations_for_node(f"{name}_paper_report")[0].metadata
        text = md["report"].value
        path = store.data_dir / "exports" / name / "paper_report" / "paper_report.md"
        assert path.read_text() == text and text.startswith(f"# {spec.title}")
        paper = pr.load_published(published_path(spec))
        # opens with the main table (after what was evaluated): the first table title in the text
        assert re.search(r"^\*\*(.+)\*\*$", text, re.M).group(1) == paper.tables[0].title
        mine = scores[scores["benchmark"] == name]
        by_key = {(r.model, r.setting, r.metric, r.slice): r.value for r in mine.itertuples()}
        ran = set(mine.loc[mine["model"] == "m-good", "setting"])
        for t in paper.tables:
            cells = pr.table_cells(t, mine, paper.published, ran | {um.SETTING})
            for rs in t.row_settings or (None,):
                for c in t.columns:
                    settings = c.settings or (c.setting if c.setting is not None else rs,)
                    metric = c.metric or t.metric
                    for setting in settings:
                        if setting in ran:  # the column names a metric the scorer writes in that setting
                            assert ((mine["setting"] == setting) & (mine["metric"] == metric)).any(), (name, t.id, c)
                    for model in ("m-good", "m-bad"):
                        vs = [by_key.get((model, s, metric, c.slice)) for s in settings]
                        v = None if None in vs else sum(vs) / len(vs)
                        got = cells[
                            (cells["model"] == model)
                            & (cells["column"] == c.name)
                            & cells["reason"].isna()
                            & ((cells["setting"] == rs) if rs is not None else True)
                        ]
                        if v is None or (isinstance(v, float) and math.isnan(v)):
                            assert got.empty or math.isnan(float(got["ours"].iloc[0]))
                        else:
                            assert math.isclose(float(got["ours"].iloc[0]), v * t.scale), (name, t.id, c, model)
            if t is paper.tables[0]:  # the main table has the evaluated models as rows
                assert (cells["model"] == "m-good").any() and (cells["model"] == "m-bad").any(), (name, t.id)
            if (cells["model"] == "m-good").any():
                assert "| m-good |" in pr.render_table(t, cells)
    maia = res.asset_materializations_for_node("maia_paper_report")[0].metadata["report"].value
    assert "| unimodal | text_only |" in maia
    vimu = res.asset_materializations_for_node("vimu_paper_report")[0].metadata
    assert "figure_fig7_error_signature_pca" in vimu and "figure_fig10_delta_fpr" in vimu
    for name, fig in (("maia", "fig3b"), ("maia", "fig3c"), ("hummus", "fig4"), ("vague", "fig4")):
        md = res.asset_materializations_for_node(f"{name}_paper_report")[0].metadata
        assert (store.data_dir / "exports" / name / "paper_report" / f"{fig}.png").is_file(), (name, fig)
        assert f"figure_{fig}" in md
