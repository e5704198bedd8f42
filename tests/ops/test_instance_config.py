"""The project's dagster.yaml loads and says what docs/operations.md promises."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg

ROOT = Path(__file__).resolve().parents[2]


def test_project_instance_config(tmp_path, monkeypatch):
    shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", tmp_path / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.DagsterInstance.get() as instance:
        cfg = instance.get_concurrency_config()
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        # a queued people-loop run is launched within a second, never behind another run's launch
        assert instance.run_coordinator.dequeue_interval_seconds == 1
        assert instance.run_coordinator.dequeue_use_threads
        assert cfg.run_queue_config.max_concurrent_runs == 4
        limits = cfg.run_queue_config.tag_concurrency_limits
        assert {"key": "subtext/inbox_batch", "limit": 1} in limits
        # each sensor's kind of run takes one slot at most: the people loop always has one of its own
        for queue in ("loop", "build"):
            assert {"key": "subtext/queue", "value": queue, "limit": 1} in limits
        assert cfg.pool_config.default_pool_limit == 4
        assert instance.run_monitoring_enabled
        # run retries: opt in per run with dagster/max_retries (a people-loop run does)
        assert instance.run_retries_enabled and instance.run_retries_max_retries == 0
        assert instance.run_monitoring_settings["free_slots_after_run_end_seconds"] == 60
        # Named pool limits live in the instance storage (what `make setup` applies).
        instance.event_log_storage.set_concurrency_slots("gpu", 1)
        instance.event_log_storage.set_concurrency_slots("llm", 4)
        assert instance.event_log_storage.get_concurrency_info("gpu").slot_count == 1
        assert instance.event_log_storage.get_concurrency_info("llm").slot_count == 4
