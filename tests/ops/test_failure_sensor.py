import dagster as dg

from forge.storage import TableStore
from resources.storage import StorageResource
from sensors.failures import record_run_failures


@dg.op
def explode():
    raise RuntimeError("corrupt input")


@dg.job
def doomed():
    explode()


def test_failed_run_is_written_to_catalog_and_tagged(tmp_path):
    instance = dg.DagsterInstance.ephemeral()
    result = doomed.execute_in_process(instance=instance, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type == dg.DagsterEventType.RUN_FAILURE)
    ctx = dg.build_run_status_sensor_context(
        sensor_name="record_run_failures",
        dagster_instance=instance,
        dagster_run=result.dagster_run,
        dagster_event=failure,
        resources={"storage": StorageResource(data_dir=str(tmp_path))},
    ).for_run_failure()
    record_run_failures(ctx)
    rows = TableStore(tmp_path).query("select run_id, job_name, failed_steps from run_failures")
    assert rows["run_id"].tolist() == [result.run_id]
    assert rows["job_name"].tolist() == ["doomed"]
    assert list(rows["failed_steps"][0]) == ["explode"]
    assert instance.get_run_by_id(result.run_id).tags["subtext/failed_steps"] == "explode"
