"""The build runner cuts the graph into segments and runs each over all its partitions."""

import os

import dagster as dg
import pytest

from cli.build import plan_segments, run_segment

parts = dg.DynamicPartitionsDefinition(name="test_batches")
seen: dict[str, list] = {"child": []}


@dg.asset
def registry(context: dg.AssetExecutionContext) -> None:
    context.instance.add_dynamic_partitions("test_batches", ["b1", "b2", "b3"])


@dg.asset(deps=[registry], partitions_def=parts, backfill_policy=dg.BackfillPolicy.single_run())
def child(context: dg.AssetExecutionContext) -> None:
    seen["child"].append(list(context.partition_keys))


@dg.asset(deps=[child], partitions_def=parts, backfill_policy=dg.BackfillPolicy.single_run())
def grandchild(context: dg.AssetExecutionContext) -> None:
    pass


@dg.asset(deps=[grandchild])
def fan_in() -> None:
    pass


def test_segments_follow_partitioning_and_run_all_partitions():
    defs = dg.Definitions(assets=[registry, child, grandchild, fan_in])
    graph = defs.resolve_asset_graph()
    segs = plan_segments(graph, graph.materializable_asset_keys)
    assert [[k.to_user_string() for k in s.keys] for s in segs] == [["registry"], ["child", "grandchild"], ["fan_in"]]
    instance = dg.DagsterInstance.ephemeral()
    seen["child"].clear()
    assert all(run_segment(defs, instance, s) for s in segs)
    assert seen["child"] == [["b1", "b2", "b3"]]  # one run over every batch
    mats = instance.fetch_materializations(dg.AssetKey("grandchild"), limit=10).records
    assert sorted(r.partition_key for r in mats) == ["b1", "b2", "b3"]


ran_after_failure: list[str] = []


@dg.asset
def broken() -> None:
    raise RuntimeError("scripted failure")


@dg.asset(deps=[broken], partitions_def=dg.StaticPartitionsDefinition(["p"]))
def after_broken() -> None:
    ran_after_failure.append("after_broken")


@dg.asset(check_specs=[dg.AssetCheckSpec("everything_rejected", asset="gated_like")])
def gated_like() -> dg.MaterializeResult:
    return dg.MaterializeResult(
        check_results=[
            dg.AssetCheckResult(check_name="everything_rejected", passed=False, severity=dg.AssetCheckSeverity.ERROR)
        ]
    )


@dg.asset(deps=[gated_like], partitions_def=dg.StaticPartitionsDefinition(["p"]))
def after_gated_like() -> None:
    ran_after_failure.append("after_gated_like")


def test_build_skips_only_what_depends_on_a_failure(monkeypatch, capsys):
    """cli.build returns False after a failed step, and never runs what depends on it (the
    segments after it still run what does not: tests/ops/test_build_failures.py). A failed
    non-blocking ERROR check fails the build but, as in Dagster, does not stop its descendants."""
    import definitions
    from cli import build as B

    for assets, expected in (([broken, after_broken], []), ([gated_like, after_gated_like], ["after_gated_like"])):
        ran_after_failure.clear()
        monkeypatch.setattr(definitions, "build_defs", lambda assets=assets: dg.Definitions(assets=assets))
        assert B.build(instance=dg.DagsterInstance.ephemeral()) is False
        assert ran_after_failure == expected
    out = capsys.readouterr().out
    assert "skip after_broken: depends on broken, which failed" in out
    assert "broken: step failed: RuntimeError: scripted failure" in out
    assert "gated_like:everything_rejected (ERROR)" in out
    assert "everything_rejected (ERROR): gated_like" in out  # the closing list, grouped by check


@pytest.mark.parametrize("user_choice", [None, "paper"])
def test_demo_runs_the_demo_settings_profile_unless_the_user_chose_one(tmp_path, monkeypatch, user_choice):
    """`make demo` / `cli.build --demo`: recipes read their `demo` profile; a profile the user
    set is kept; leaving the demo restores the environment."""
    from cli.demo import prepare_demo
    from forge.benchmarks.settings import PROFILE_ENV, recipe_settings

    monkeypatch.setenv("SUBTEXT_DEMO_PORT", "0")
    if user_choice:
        monkeypatch.setenv(PROFILE_ENV, user_choice)
    else:
        monkeypatch.delenv(PROFILE_ENV, raising=False)
    with prepare_demo(str(tmp_path / "data")):
        assert os.environ[PROFILE_ENV] == (user_choice or "demo")
        got = recipe_settings("vague")["candidates"]["min_persons"]
    assert got == (2 if user_choice == "paper" else 0)
    assert os.environ.get(PROFILE_ENV) == user_choice
    # recorded in the data dir: `make ui` on it loads the same profile (no false Unsynced)
    assert (tmp_path / "data" / "recipe_profile").read_text().strip() == (user_choice or "demo")


@dg.asset(group_name="left")
def left_root() -> None:
    pass


@dg.asset(group_name="right", deps=[left_root])
def right_leaf() -> None:
    pass


@dg.asset(group_name="right")
def unjobbed() -> None:
    pass


def test_segments_run_as_named_jobs_split_where_no_job_covers_them():
    """A build records its runs under the project's named jobs (the Jobs page history): a
    segment no single job covers runs as one piece per job, in dependency order; an asset no
    named job selects still runs (implicit asset job)."""
    from cli.build import assign_jobs, build, named_job_selections

    defs = dg.Definitions(
        assets=[registry, child, grandchild, fan_in, left_root, right_leaf, unjobbed],
        jobs=[
            dg.define_asset_job("batch_job", selection=[child, grandchild]),
            dg.define_asset_job("everything_job", selection=[registry, child, grandchild, right_leaf]),
            dg.define_asset_job("left_job", selection=[left_root, registry, fan_in]),
            dg.define_asset_job("right_job", selection=[right_leaf]),
        ],
    )
    graph = defs.resolve_asset_graph()
    segs = assign_jobs(graph, plan_segments(graph, graph.materializable_asset_keys), named_job_selections(defs, graph))
    got = [(s.job, sorted(k.to_user_string() for k in s.keys)) for s in segs]
    # smallest covering job wins; the unpartitioned segment is split by job, right_job after left_job
    assert ("batch_job", ["child", "grandchild"]) in got
    names = [j for j, _ in got]
    assert names.index("left_job") < names.index("right_job")
    assert (None, ["unjobbed"]) in got

    import definitions

    instance = dg.DagsterInstance.ephemeral()
    mp = pytest.MonkeyPatch()
    mp.setattr(definitions, "build_defs", lambda: defs)
    try:
        assert build(instance=instance) is True
    finally:
        mp.undo()
    runs = {r.job_name for r in instance.get_runs()}
    assert {"batch_job", "left_job", "right_job"} <= runs
    assert not any(n.startswith("everything") for n in runs)
