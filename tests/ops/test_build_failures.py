"""Failures stay local: a failed step or blocking check in one benchmark stops only what depends
on it; `cli.build` still builds, exports and evaluates the other benchmarks, exits non-zero,
and its summary names what failed and what was skipped because of it.

The graph has the build's shape (per-batch recipe stages, an unpartitioned export fan-in,
per-model evaluations: three segments run as three Dagster runs), five benchmarks, one broken.
"""

import dagster as dg
import pytest

from cli import build as B

BENCHMARKS = ["maia", "vague", "vimu", "iibench", "hummus"]
batches = dg.DynamicPartitionsDefinition(name="fail_batches")
models = dg.StaticPartitionsDefinition(["m1"])
built: list[str] = []
BROKEN = {"how": "step"}


@dg.asset
def registry(context: dg.AssetExecutionContext) -> None:
    context.instance.add_dynamic_partitions("fail_batches", ["b1", "b2"])
    built.append("registry")


def _chain(bench: str) -> list:
    checks = [dg.AssetCheckSpec("contract", asset=f"{bench}_items", blocking=True)]

    @dg.asset(
        name=f"{bench}_items",
        deps=[registry],
        partitions_def=batches,
        backfill_policy=dg.BackfillPolicy.single_run(),
        check_specs=checks,
    )
    def items(context: dg.AssetExecutionContext):
        if bench == "maia" and BROKEN["how"] == "step":
            raise RuntimeError("a segment failed on the endpoint")
        built.append(f"{bench}_items")
        ok = not (bench == "maia" and BROKEN["how"] == "check")
        return dg.MaterializeResult(
            check_results=[dg.AssetCheckResult(check_name="contract", passed=ok, severity=dg.AssetCheckSeverity.ERROR)]
        )

    @dg.asset(name=f"{bench}_export", deps=[items])
    def export() -> None:
        built.append(f"{bench}_export")

    @dg.asset(name=f"{bench}_eval", deps=[export], partitions_def=models)
    def evaluate() -> None:
        built.append(f"{bench}_eval")

    return [items, export, evaluate]


ASSETS = [registry] + [a for b in BENCHMARKS for a in _chain(b)]


@pytest.mark.parametrize("how", ["step", "check"])
def test_one_failed_benchmark_leaves_the_other_four_built(how, monkeypatch, capsys):
    monkeypatch.setitem(BROKEN, "how", how)
    built.clear()
    instance = dg.DagsterInstance.ephemeral()
    ok = B.build(instance=instance, defs=dg.Definitions(assets=ASSETS))

    assert ok is False  # the build reports the failure (cli.build exits 1)
    others = [b for b in BENCHMARKS if b != "maia"]
    assert sorted(b for b in built if b.endswith("_export")) == sorted(f"{b}_export" for b in others)
    assert sorted(b for b in built if b.endswith("_eval")) == sorted(f"{b}_eval" for b in others)
    assert "maia_export" not in built and "maia_eval" not in built
    for b in others:  # recorded in the instance, as the UI shows them
        assert instance.get_latest_materialization_event(dg.AssetKey(f"{b}_export")) is not None
    assert instance.get_latest_materialization_event(dg.AssetKey("maia_export")) is None

    out = capsys.readouterr().out
    why = "step failed: RuntimeError: a segment failed" if how == "step" else "blocking check contract failed"
    assert f"maia_items: {why}" in out, out
    assert "skip maia_export: depends on maia_items, which failed" in out, out
    assert "skipped, depends on it: maia_eval, maia_export" in out, out


def test_main_exits_non_zero_after_a_local_failure(monkeypatch):
    import definitions

    monkeypatch.setitem(BROKEN, "how", "step")
    monkeypatch.setattr(definitions, "build_defs", lambda: dg.Definitions(assets=ASSETS))
    monkeypatch.setattr(B, "print_build_summary", lambda: None)
    monkeypatch.setattr(dg.DagsterInstance, "get", staticmethod(dg.DagsterInstance.ephemeral))
    built.clear()
    assert B.main([]) == 1
    assert "hummus_eval" in built


def test_keep_runnable_drops_only_descendants():
    from cli.outcomes import Outcomes

    graph = dg.Definitions(assets=ASSETS).resolve_asset_graph()
    out = Outcomes(failed={"vague_items": "step failed: x"})
    keys = [dg.AssetKey(f"{b}_{s}") for b in BENCHMARKS for s in ("export", "eval")]
    kept = {k.to_user_string() for k in out.keep_runnable(graph, keys)}
    assert kept == {f"{b}_{s}" for b in BENCHMARKS if b != "vague" for s in ("export", "eval")}
    assert out.skipped == {"vague_export": "vague_items", "vague_eval": "vague_items"}


def test_dry_run_prints_the_runs_and_runs_nothing(capsys):
    built.clear()
    instance = dg.DagsterInstance.ephemeral()
    assert B.build(instance=instance, defs=dg.Definitions(assets=ASSETS), dry_run=True) is True
    out = capsys.readouterr().out
    assert built == [] and not instance.get_runs()
    assert "Dry run" in out and "[partitions registered by `sources`]" in out and "maia_eval" in out


def test_batch_filter_builds_only_matching_batches(monkeypatch):
    monkeypatch.setitem(BROKEN, "how", "none")
    instance = dg.DagsterInstance.ephemeral()
    assert B.build(instance=instance, defs=dg.Definitions(assets=ASSETS), batch_patterns=["b2"]) is True
    assert instance.get_materialized_partitions(dg.AssetKey("vague_items")) == {"b2"}
    assert instance.get_materialized_partitions(dg.AssetKey("hummus_eval")) == {"m1"}  # not a batch partition


def test_operational_tags_stay_out_of_sight(monkeypatch):
    """The runs list shows a run's user tags: only `subtext/launched_by`; process and heartbeat
    tags carry Dagster's hidden prefix (the dead-run sweep still reads them)."""
    from dagster._core.storage.tags import TagType, get_tag_type

    from sensors.run_health import PID_TAG

    monkeypatch.setitem(BROKEN, "how", "none")
    instance = dg.DagsterInstance.ephemeral()
    assert B.build(instance=instance, defs=dg.Definitions(assets=ASSETS), batch_patterns=["b1"])
    for run in instance.get_runs():
        shown = {k for k in run.tags if get_tag_type(k) == TagType.USER_PROVIDED}
        assert shown == {"subtext/launched_by"}, shown
        assert PID_TAG in run.tags
