"""Scaling out, shown on this machine: a project asset runs as a step on a local Dask cluster
through `dagster_dask.dask_executor` (the same job points at a remote scheduler with
`cluster: {existing: {address: tcp://scheduler:8786}}`; docs/operations.md).

Known limit (dagster-dask 0.29.27 with dask 2026.8): a *partitioned* run fails when the executor
submits the step ("Iteration is not allowed on @record KeyRangesPartitionsSubset": dask's task
spec walks Dagster's records), so the per-batch stages scale out with run launchers instead.
"""

from __future__ import annotations

import dagster as dg
import pytest
from PIL import Image

from forge.storage import TableStore

pytest.importorskip("dagster_dask")


def test_sources_step_runs_on_a_local_dask_cluster(tmp_path, monkeypatch):
    from tests.ops.dask_job import dask_sources_job

    images = tmp_path / "data" / "imgs"  # local sources must lie in the data dir or allowed_roots
    images.mkdir(parents=True)
    for i, colour in enumerate(("red", "blue", "green")):
        Image.new("RGB", (64, 48), colour).save(images / f"{i}.png")
    src = tmp_path / "sources.yaml"
    src.write_text(f"sources:\n  - {{name: dask, type: folder, path: '{images}', media: image, batch_size: 2}}\n")
    monkeypatch.setenv("SUBTEXT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SUBTEXT_SOURCES", str(src))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))

    job = dask_sources_job()
    assert job.executor_def.name == "dask"
    run_config = {"execution": {"config": {"cluster": {"local": {
        "n_workers": 1, "threads_per_worker": 1, "processes": False, "dashboard_address": None}}}}}
    with dg.DagsterInstance.get() as instance:
        with dg.execute_job(dg.reconstructable(dask_sources_job), instance, run_config=run_config) as result:
            assert result.success
            done = {e.step_key for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_SUCCESS}
            assert done == {"sources"}
        assert sorted(instance.get_dynamic_partitions("batches")) == ["dask-0000", "dask-0001"]
        assert instance.get_latest_materialization_event(dg.AssetKey("sources")) is not None
    items = TableStore(tmp_path / "data").read("source_items")
    assert sorted(items["batch"]) == ["dask-0000", "dask-0000", "dask-0001"]
