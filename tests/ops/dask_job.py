"""A reconstructable job for tests/ops/test_dask_executor.py: the `sources` asset on the Dask
executor (steps are shipped to Dask workers, so the job must be importable by name)."""

import os

import dagster as dg
from dagster_dask import dask_executor

from assets.ingest.trunk import sources
from resources.ingest import IngestResource
from resources.storage import StorageResource


def dask_sources_job() -> dg.JobDefinition:
    job = dg.define_asset_job("dask_sources", selection=["sources"], executor_def=dask_executor)
    defs = dg.Definitions(
        assets=[sources],
        jobs=[job],
        resources={"storage": StorageResource(data_dir=os.environ["SUBTEXT_DATA_DIR"]),
                   "ingest": IngestResource(sources_path=os.environ["SUBTEXT_SOURCES"])},
    )
    return defs.resolve_job_def("dask_sources")

