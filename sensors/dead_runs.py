"""The daemon's dead-run sweep: every minute, runs whose process died are marked failed,
their pool slots freed and their row written to `run_failures` (sensors/run_health.py)."""

from __future__ import annotations

import dagster as dg

from resources.storage import StorageResource
from sensors.failures import record_failure
from sensors.run_health import sweep_dead_runs


@dg.sensor(
    name="sweep_dead_runs",
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Marks runs whose process died as failed, frees their pool slots, records them in `run_failures`.",
)
def sweep_dead_runs_sensor(context: dg.SensorEvaluationContext, storage: StorageResource) -> dg.SkipReason:
    store = storage.store
    failed = sweep_dead_runs(
        context.instance, record=lambda run, msg, steps: record_failure(store, run, msg, steps), check_launched=True
    )
    return dg.SkipReason(f"marked {len(failed)} dead runs failed: {', '.join(failed)}" if failed else "no dead runs")


defs = dg.Definitions(sensors=[sweep_dead_runs_sensor])
