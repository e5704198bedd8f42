"""One reader of tests/foundation/test_publish_under_load.py: queries table ``t`` until told to
stop, the way users do, and writes its counts as JSON.

    python publish_load_reader.py DATA_DIR catalog|store STOP_FILE OUT_JSON EXPECTED_ROWS SEED READY_DIR

``catalog`` holds an ``open_catalog`` connection for a few queries, then reconnects (``make
query``, the build summary, a notebook); ``store`` reads through ``TableStore.read`` (what the
stages do). A read fails when it raises or returns another row count than EXPECTED_ROWS."""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from forge.storage import TableStore, open_catalog

SQL = "select count(*), sum(v), max(s) from t"  # reads every column's pages, not only the footers
HOLD_QUERIES = (1, 12)  # a held connection answers this many queries...
HOLD_S = 0.5  # ...or for this long, then the reader reconnects


def main(data_dir: str, kind: str, stop_file: str, out: str, expected: int, seed: int, ready_dir: str) -> None:
    os.nice(19)  # the writer's loop runs at full speed: a publish is not slowed by a reader
    store = TableStore(data_dir)
    rng = random.Random(seed)
    reads = errors = wrong = 0
    samples: list[str] = []
    con, held, opened = None, 0, 0.0
    limit = rng.randint(*HOLD_QUERIES)
    while not os.path.exists(stop_file):
        try:
            if kind == "catalog":
                if con is None or held >= limit or time.monotonic() - opened > HOLD_S:
                    if con is not None:
                        con.close()
                    con, held, opened, limit = open_catalog(data_dir), 0, time.monotonic(), rng.randint(*HOLD_QUERIES)
                rows = con.execute(SQL).fetchone()[0]
                held += 1
            else:
                rows = len(store.read("t", columns=["v", "s"]))
            reads += 1
            if rows != expected:
                wrong += 1
                samples.append(f"{rows} rows, not {expected}")
            if reads == 1:
                Path(ready_dir, str(seed)).touch()
        except Exception as exc:  # noqa: BLE001 - any error a user would see counts
            errors += 1
            samples.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            if con is not None:
                con.close()
            con = None
        time.sleep(0.002)  # a person's notebook, not a busy loop: leaves the writer its share of 2 cores
    if con is not None:
        con.close()
    Path(out).write_text(json.dumps({"reads": reads, "errors": errors, "wrong": wrong, "samples": samples[:5]}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), sys.argv[7])
