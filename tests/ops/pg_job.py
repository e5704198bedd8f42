"""A small code location for tests/ops/test_postgres.py: a partitioned asset for a daemon
backfill, and a rendezvous asset whose run succeeds only while a second run is running."""

import os
import time
from pathlib import Path

import dagster as dg

letters = dg.StaticPartitionsDefinition(["a", "b", "c"])


@dg.asset(partitions_def=letters, pool="llm")
def pg_letters(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"letter": context.partition_key, "pid": os.getpid()})


class Rendezvous(dg.Config):
    me: str
    other: str
    wait_s: float = 240.0


@dg.asset
def pg_rendezvous(config: Rendezvous) -> dg.MaterializeResult:
    """Leaves a mark, then waits for the other run's mark: both runs must be in flight at once."""
    folder = Path(os.environ["PG_TEST_DIR"])
    (folder / config.me).touch()
    t_end = time.time() + config.wait_s
    while not (folder / config.other).exists():
        if time.time() > t_end:
            raise RuntimeError(f"run {config.me} never met run {config.other}: runs were not concurrent")
        time.sleep(0.5)
    return dg.MaterializeResult(metadata={"met": config.other})


letters_job = dg.define_asset_job("letters_job", selection=[pg_letters], partitions_def=letters)
rendezvous_job = dg.define_asset_job("rendezvous_job", selection=[pg_rendezvous])
defs = dg.Definitions(assets=[pg_letters, pg_rendezvous], jobs=[letters_job, rendezvous_job])
