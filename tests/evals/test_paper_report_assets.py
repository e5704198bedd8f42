"""The Dagster assets of issue 46 materialized on a catalog: an evaluation a spec declares beside
the models (``EvalSpec.extra_evals``) gets its own asset, and the paper report runs after it. A
paper report asset writing its Markdown is tested beside its paper
(tests/recipes/iibench/test_iibench_paper_report_asset.py), as is MAIA's own baseline
(tests/recipes/maia/test_maia_unimodal_report.py)."""

from __future__ import annotations

from dataclasses import replace

import dagster as dg

from assets.evals.baselines import baseline_defs
from assets.evals.paper_reports import paper_report_defs
from assets.recipes.iibench.hooks import IIBenchHooks
from forge.benchmarks import registry
from forge.benchmarks.registry import resolve
from forge.benchmarks.spec import ExtraEval
from resources.storage import StorageResource


def _assets(defs: dg.Definitions, name: str):
    return next(a for a in defs.assets if name in {k.to_user_string() for k in a.keys})


COIN = ExtraEval(
    name="coin_eval",
    model="coin",
    settings=("blind",),
    code_version="coin-1",
    description="a coin toss per item",
    how_to_configure="set benchmarks.<name>.coin",
)


class CoinHooks(IIBenchHooks):
    """II-Bench's behaviour plus the coin toss: configured by ``benchmarks.<name>.coin``."""

    def extra_eval_configure(self, name, block):
        assert name == COIN.name  # the factory asks by the evaluation's name
        return block.get("coin")

    def extra_eval_evaluate(self, name, spec, items, split, settings, n_boot, seed):
        raise AssertionError("not configured: never called")


def test_a_declared_extra_evaluation_gets_its_asset_before_the_paper_report(tmp_path):
    base = resolve("iibench")
    assert base.eval.extra_evals == ()  # a paper that declares none gets no such asset
    assert not baseline_defs((base,)).assets
    toy = replace(
        base, name="coinbench", group="coinbench", hooks=CoinHooks(), eval=replace(base.eval, extra_evals=(COIN,))
    )
    with registry.registered(toy):
        asset = _assets(baseline_defs((toy,)), "coinbench_coin_eval")
        assert asset.code_versions_by_key[dg.AssetKey("coinbench_coin_eval")] == "coin-1"
        assert {k.to_user_string() for k in asset.dependency_keys} == {"coinbench_export"}
        report = _assets(paper_report_defs((toy,)), "coinbench_paper_report")
        assert {k.to_user_string() for k in report.dependency_keys} == {"coinbench_eval", "coinbench_coin_eval"}
        res = dg.materialize(
            [asset], resources={"storage": StorageResource(data_dir=str(tmp_path))}, raise_on_error=True
        )
    md = res.asset_materializations_for_node("coinbench_coin_eval")[0].metadata
    assert md["skipped"].value == "set benchmarks.<name>.coin"  # not configured: nothing evaluated
    checks = res.get_asset_check_evaluations()
    assert {c.check_name for c in checks} == {"contract_eval_predictions", "contract_eval_scores"}
