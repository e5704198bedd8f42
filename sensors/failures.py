"""Failed runs land where users look: the `run_failures` table and the run's own tags."""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg
import pandas as pd

from forge.storage import refresh_catalog
from forge.storage.contracts import load_contract
from resources.storage import StorageResource


def failure_row(run: dg.DagsterRun, message: str, failed_steps: list[str]) -> dict:
    tags = run.tags or {}
    partition = tags.get("dagster/partition") or (
        f"{tags['dagster/asset_partition_range_start']}...{tags['dagster/asset_partition_range_end']}"
        if "dagster/asset_partition_range_start" in tags
        else None
    )
    assets = sorted(k.to_user_string() for k in (run.asset_selection or []))
    return {
        "run_id": run.run_id,
        "job_name": run.job_name,
        "failed_at": datetime.now(UTC),
        "partition": partition,
        "assets": assets or None,
        "failed_steps": failed_steps or None,
        "message": (message or "")[:2000],
    }


def record_failure(store, run: dg.DagsterRun, message: str, failed_steps: list[str]) -> None:
    """One row per failed run (its own partition file, so recording it twice never duplicates)."""
    contract = load_contract("run_failures")
    store.write(
        "run_failures",
        contract.conform(pd.DataFrame([failure_row(run, message, failed_steps)])),
        run.run_id,
        schema=contract.arrow_schema(),
    )
    refresh_catalog(store)


def failure_message(event: dg.DagsterEvent | None) -> str:
    """The run failure's message plus the error behind it (e.g. why an interrupted run stopped)."""
    if event is None:
        return ""
    data = getattr(event, "event_specific_data", None)
    error = getattr(data, "error", None)
    cause = (error.message or "").strip() if error is not None else ""
    message = event.message or ""
    return f"{message} ({cause})" if cause and cause not in message else message


@dg.run_failure_sensor(
    name="record_run_failures",
    default_status=dg.DefaultSensorStatus.RUNNING,
    monitor_all_code_locations=False,
    description="Writes each failed run to the `run_failures` table and tags the run with the failed steps.",
)
def record_run_failures(context: dg.RunFailureSensorContext, storage: StorageResource) -> None:
    steps = sorted({e.step_key for e in context.get_step_failure_events() if e.step_key})
    record_failure(storage.store, context.dagster_run, failure_message(context.failure_event), steps)
    context.instance.add_run_tags(context.dagster_run.run_id, {"subtext/failed_steps": ",".join(steps)[:250] or "-"})
    context.log.info(f"recorded failed run {context.dagster_run.run_id} ({len(steps)} failed steps)")


defs = dg.Definitions(sensors=[record_run_failures])
