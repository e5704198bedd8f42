"""Declarative automation: fan-ins and reports carry conditions, paid or publishing stages do
not, and the sensor that acts on them starts stopped (opening the UI never starts runs)."""

import dagster as dg

from definitions import build_defs


def test_conditions_on_fanins_and_reports_only_and_the_sensor_starts_stopped():
    defs = build_defs()
    graph = defs.resolve_asset_graph()
    auto = {k.to_user_string() for k in graph.materializable_asset_keys if graph.get(k).automation_condition}
    assert "duplicates" in auto
    for suffix in ("_splits", "_release_report", "_eval_report"):
        assert any(a.endswith(suffix) for a in auto), suffix
    # money (LLM gates, evals) and publishing (exports) stay the user's decision
    manual = {a for a in auto if a.endswith(("_gated", "_export", "_eval", "_release"))}
    assert manual == set()
    repo = defs.get_repository_def()
    sensors = {s.name: s for s in repo.sensor_defs}
    assert "default_automation_condition_sensor" not in sensors  # ours covers every condition
    assert sensors["automation_sensor"].default_status == dg.DefaultSensorStatus.STOPPED
