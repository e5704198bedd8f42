"""``python -m cli.build`` over a small graph, for tests/ops/test_build_signal.py: four assets in
four runs (three partitionings), the first of which leaves a mark and then waits to be stopped.
Every asset leaves a mark when it starts, so the test sees which runs did anything."""

import os
import sys
import time
from pathlib import Path

import dagster as dg

from cli import build as B

MARKS = Path(os.environ.get("SIGNAL_TEST_MARKS", "."))
xs = dg.StaticPartitionsDefinition(["x"])
ys = dg.StaticPartitionsDefinition(["y"])


def _mark(name: str) -> None:
    (MARKS / name).touch()


@dg.asset
def sig_first() -> None:
    _mark("sig_first")
    t_end = time.time() + 120  # a SIGTERM ends it long before; the test fails first if none comes
    while time.time() < t_end:
        time.sleep(0.1)


@dg.asset(deps=[sig_first], partitions_def=xs)
def sig_second() -> None:
    _mark("sig_second")


@dg.asset(deps=[sig_second])
def sig_third() -> None:
    _mark("sig_third")


@dg.asset(partitions_def=ys)
def sig_other() -> None:  # depends on nothing: only the stop keeps it from running
    _mark("sig_other")


defs = dg.Definitions(assets=[sig_first, sig_second, sig_third, sig_other])

if __name__ == "__main__":
    sys.exit(B.main(sys.argv[1:], defs=defs))
