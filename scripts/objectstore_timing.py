"""Side-by-side timings, local disk vs a bucket (docs/operations.md "Object storage"): the same
tables written to ``data/``-style local storage and to an S3-compatible server (moto on
127.0.0.1, started here), then the catalog opened and a ready query run on each.

    .venv/bin/python scripts/objectstore_timing.py [--parts 20] [--rows 2000]

Needs the test dependency group (moto). Prints one line per measurement; writes nothing outside
a temporary directory and the throwaway server."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from forge.storage import TableStore, location, open_catalog, refresh_catalog
from tests.objectstore.s3_server import S3Server

QUERY = (
    "select stage, reason, count(*) as n, any_value(detail) as example from rejects group by all order by stage, n desc"
)


def _fill(store: TableStore, parts: int, rows: int) -> float:
    t = time.perf_counter()
    for p in range(parts):
        df = pd.DataFrame(
            {
                "stage": [f"stage{p % 5}"] * rows,
                "partition": [f"b{p}"] * rows,
                "item_id": [f"i{p}-{i}" for i in range(rows)],
                "reason": [f"reason{i % 7}" for i in range(rows)],
                "detail": ["why"] * rows,
            }
        )
        store.write("rejects", df, part=f"stage{p % 5}__b{p}")
    refresh_catalog(store)
    return time.perf_counter() - t


def _time_query(store: TableStore, repeat: int = 5) -> tuple[float, float]:
    opens, queries = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        con = open_catalog(store)
        opens.append(time.perf_counter() - t)
        t = time.perf_counter()
        con.execute(QUERY).fetchall()
        queries.append(time.perf_counter() - t)
        con.close()
    return statistics.median(opens), statistics.median(queries)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", type=int, default=20)
    ap.add_argument("--rows", type=int, default=2000)
    args = ap.parse_args()
    server = S3Server()
    os.environ.update(server.env())
    server.make_bucket("timing")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[location.WORK_DIR_ENV] = str(Path(tmp) / "work")
        for name, where in (("local disk", str(Path(tmp) / "data")), ("bucket", "s3://timing/forge")):
            store = TableStore(where)
            write_s = _fill(store, args.parts, args.rows)
            open_s, query_s = _time_query(store)
            print(
                f"{name}: write {args.parts} partitions x {args.rows} rows + publish {write_s:.2f} s; "
                f"open_catalog {open_s * 1000:.0f} ms; ready query 'rejects by stage and reason' {query_s * 1000:.0f} ms"
            )
    server.stop()


if __name__ == "__main__":
    main()
