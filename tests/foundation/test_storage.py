import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from forge.storage import RejectLog, TableStore, open_catalog, refresh_catalog
from forge.storage.contracts import load_contract, parse_contract


def test_write_replaces_partition_and_reads_union(tmp_path):
    store = TableStore(tmp_path)
    store.write("t", pd.DataFrame({"a": [1, 2]}), "p1")
    store.write("t", pd.DataFrame({"a": [3]}), "p2")
    store.write("t", pd.DataFrame({"a": [9]}), "p1")  # re-run of p1 replaces its rows
    assert sorted(store.read("t")["a"]) == [3, 9]
    assert sorted(store.read("t", parts=["p1"])["a"]) == [9]
    assert store.parts("t") == ["p1", "p2"]
    assert not list(store.table_dir("t").glob("*.tmp"))


def test_failed_write_keeps_previous_file(tmp_path):
    store = TableStore(tmp_path)
    store.write("t", pd.DataFrame({"a": [1]}), "p")
    contract = parse_contract(
        {"table": "t", "columns": [{"name": "a", "type": "int64"}, {"name": "b", "type": "string", "nullable": False}]}
    )
    with pytest.raises(ValueError):
        store.write("t", pd.DataFrame({"a": [2]}), "p", schema=contract.arrow_schema())
    assert list(store.read("t")["a"]) == [1]


def test_contract_validation_reports_each_violation():
    c = parse_contract(
        {
            "table": "x",
            "unique": ["id"],
            "columns": [
                {"name": "id", "type": "string", "nullable": False},
                {"name": "score", "type": "float64", "min": 0, "max": 1},
                {"name": "kind", "type": "string", "values": ["a", "b"]},
            ],
        }
    )
    good = pd.DataFrame({"id": ["1", "2"], "score": [0.1, 1.0], "kind": ["a", "b"]})
    assert c.validate(good) == []
    bad = pd.DataFrame({"id": ["1", "1", None], "score": [-1, 2, 0.5], "kind": ["a", "z", "b"], "extra": [1, 2, 3]})
    problems = " | ".join(c.validate(bad))
    assert "null" in problems and "below 0" in problems and "above 1" in problems
    assert "values outside" in problems and "duplicate" in problems and "not in contract" in problems


def test_every_contract_parses_and_has_a_schema():
    from forge.storage.contracts import all_contracts

    contracts = all_contracts()
    assert "rejects" in contracts and "frames" in contracts
    assert "maia_items" in contracts and "hummus_regions" in contracts  # a paper's own, from its package
    for name, c in contracts.items():
        assert c.table == name, f"{name}.yaml declares table {c.table}"
        assert len(c.arrow_schema()) == len(c.columns)


def test_catalog_views_track_new_partitions_and_empty_tables(tmp_path):
    store = TableStore(tmp_path)
    refresh_catalog(store)
    with open_catalog(store) as con:
        # a contract table with no files yet is an empty, typed view
        assert con.execute("select count(*) from rejects").fetchone()[0] == 0
    log = RejectLog("download", "b-0000")
    log.add("u1", "dead_url", "HTTPError", "404")
    store.write(
        "rejects",
        load_contract("rejects").conform(log.frame()),
        log.part_name(),
        schema=load_contract("rejects").arrow_schema(),
    )
    refresh_catalog(store)
    store.write(
        "rejects",
        load_contract("rejects").conform(log.frame()).assign(item_id="u2"),
        "x__y",
        schema=load_contract("rejects").arrow_schema(),
    )
    # the catalog shows the last publish: the new partition once a publish refreshes it
    with open_catalog(store) as con:
        assert con.execute("select item_id from rejects").fetchall() == [("u1",)]
    refresh_catalog(store)
    with open_catalog(store) as con:
        rows = con.execute("select item_id, reason from rejects order by item_id").fetchall()
    assert rows == [("u1", "dead_url"), ("u2", "dead_url")]


def _reject_frame(item: str):
    log = RejectLog("download", "b-0000")
    log.add(item, "dead_url", "HTTPError", "404")
    return load_contract("rejects").conform(log.frame())


def test_refresh_swaps_the_file_while_a_reader_holds_it_read_write(tmp_path):
    """Publishing never waits on a reader: even one holding the catalog open read-write (the
    worst case) neither delays nor blocks the refresh, and the new table gets its view."""
    store = TableStore(tmp_path)
    refresh_catalog(store)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb,time; c=duckdb.connect({str(store.catalog_path)!r}); print('ok', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ok"
        store.write("brand_new_table", pd.DataFrame({"a": [1, 2]}), "p1")
        assert "brand_new_table" in refresh_catalog(store)
        with open_catalog(store) as con:
            assert con.execute("select sum(a) from brand_new_table").fetchone()[0] == 3
    finally:
        holder.kill()
        holder.wait()


def test_reader_held_open_keeps_working_through_refreshes(tmp_path):
    store = TableStore(tmp_path)
    store.write("rejects", _reject_frame("u1"), "a__b", schema=load_contract("rejects").arrow_schema())
    refresh_catalog(store)
    held = open_catalog(store)
    for i in range(5):
        store.write(f"t{i}", pd.DataFrame({"a": [i]}), "p")
        refresh_catalog(store)
        # the held connection still answers from its file (the publish it opened)
        assert held.execute("select count(*) from rejects").fetchone()[0] == 1
    held.close()
    with open_catalog(store) as con:
        views = {r[0] for r in con.execute("select view_name from duckdb_views() where not internal").fetchall()}
    assert {f"t{i}" for i in range(5)} <= views
    assert not list(tmp_path.glob(".catalog.building.*"))


def test_unchanged_refresh_does_not_rewrite_the_file(tmp_path):
    store = TableStore(tmp_path)
    refresh_catalog(store)
    before = store.catalog_path.stat().st_ino
    refresh_catalog(store)
    assert store.catalog_path.stat().st_ino == before
    store.write("t", pd.DataFrame({"a": [1]}), "p")
    refresh_catalog(store)
    assert store.catalog_path.stat().st_ino != before
    # and the writers' lock is free again for another process
    code = f"from filelock import FileLock; FileLock({str(tmp_path / '.catalog.lock')!r}).acquire(timeout=5)"
    probe = subprocess.run([sys.executable, "-c", code], check=False)
    assert probe.returncode == 0


def test_readers_opening_in_a_loop_never_fail_during_publishes(tmp_path):
    store = TableStore(tmp_path)
    store.write("rejects", _reject_frame("u0"), "a__b", schema=load_contract("rejects").arrow_schema())
    refresh_catalog(store)
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"""
import sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from forge.storage import open_catalog
ok = fail = 0
t_end = time.time() + 6
while time.time() < t_end:
    try:
        with open_catalog({str(tmp_path)!r}) as con:
            con.execute("select count(*) from rejects").fetchone()
        ok += 1
    except Exception as exc:
        fail += 1
        print("FAIL", exc, flush=True)
print("RESULT", ok, fail, flush=True)
""",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    publishes = 0
    while reader.poll() is None:
        store.write(f"new_{publishes}", pd.DataFrame({"a": [publishes]}), "p")  # a new table: a real rewrite
        refresh_catalog(store)
        publishes += 1
    out = reader.stdout.read()
    result = [line for line in out.splitlines() if line.startswith("RESULT")]
    assert result, out
    _, ok, fail = result[0].split()
    assert int(fail) == 0, out
    assert int(ok) > 10 and publishes > 5


def test_copied_data_dir_reads_its_own_tables(tmp_path):
    src = TableStore(tmp_path / "a")
    src.write("t", pd.DataFrame({"a": [1]}), "p")
    refresh_catalog(src)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    copy = TableStore(tmp_path / "b")
    copy.write("t", pd.DataFrame({"a": [7]}), "p")  # the copy diverges from the original
    shutil.rmtree(tmp_path / "a")  # and the original is gone
    with open_catalog(copy) as con:
        assert con.execute("select a from t").fetchall() == [(7,)]


def test_killed_refresh_leaves_a_working_catalog(tmp_path):
    store = TableStore(tmp_path)
    store.write("t", pd.DataFrame({"a": [1]}), "p")
    refresh_catalog(store)
    # what a kill -9 mid-build leaves: a half-made file beside the catalog
    (tmp_path / ".catalog.building.999.duckdb").write_bytes(b"partial")
    with open_catalog(store) as con:
        assert con.execute("select a from t").fetchall() == [(1,)]
    store.write("u", pd.DataFrame({"b": [2]}), "p")
    refresh_catalog(store)
    assert not list(tmp_path.glob(".catalog.building.*"))
    with open_catalog(store) as con:
        assert con.execute("select b from u").fetchall() == [(2,)]


def test_empty_frame_conforms_to_an_empty_table_with_every_column(tmp_path):
    c = parse_contract(
        {"table": "x", "columns": [{"name": "id", "type": "string", "nullable": False}, {"name": "n", "type": "int64"}]}
    )
    empty = c.conform(pd.DataFrame())
    assert list(empty.columns) == ["id", "n"] and empty.empty
    store = TableStore(tmp_path)
    store.write("x", empty, "b1", schema=c.arrow_schema())
    assert list(store.read("x").columns) == ["id", "n"]
    with pytest.raises(ValueError):
        c.conform(pd.DataFrame({"n": [1]}))  # rows without a required column still fail


def test_read_batch_from_partition_file_or_batch_column(tmp_path):
    store = TableStore(tmp_path)
    store.write("per_batch", pd.DataFrame({"batch": ["b1"], "v": [1]}), "b1")
    store.write("fan_in", pd.DataFrame({"batch": ["b1", "b2", "b1"], "v": [1, 2, 3]}))
    store.write("no_batch", pd.DataFrame({"v": [1]}))
    assert store.read_batch("per_batch", "b1")["v"].tolist() == [1]
    assert store.read_batch("per_batch", "b2").empty
    assert sorted(store.read_batch("fan_in", "b1")["v"]) == [1, 3]
    assert store.read_batch("no_batch", "b1").empty and store.read_batch("missing", "b1").empty
    assert store.read_batch("fan_in", "x' or '1'='1").empty  # the key is quoted, not spliced


def test_kill_9_during_publishes_leaves_a_consistent_catalog(tmp_path):
    """A publisher killed -9 mid-loop (most of its time is spent building catalogs): every view
    of the catalog it leaves still answers, and the next publish cleans up and adds its table."""
    store = TableStore(tmp_path)
    publisher = f"""
import sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
import pandas as pd
from forge.storage import TableStore, refresh_catalog
store = TableStore({str(tmp_path)!r})
i = 0
while True:
    store.write(f"t{{i}}", pd.DataFrame({{"a": [i]}}), "p")
    refresh_catalog(store)
    print(i, flush=True)
    i += 1
"""
    for kill_after in (2, 5, 9):
        proc = subprocess.Popen([sys.executable, "-c", publisher], stdout=subprocess.PIPE, text=True)
        for _ in range(kill_after):
            assert proc.stdout.readline(), "publisher died on its own"
        proc.kill()
        proc.wait()
        with open_catalog(store) as con:
            views = [r[0] for r in con.execute("select view_name from duckdb_views() where not internal").fetchall()]
            for v in views:
                con.execute(f'select count(*) from "{v}"').fetchone()
        assert any(v.startswith("t") for v in views)
    store.write("last", pd.DataFrame({"a": [1]}), "p")
    assert "last" in refresh_catalog(store)
    assert not list(tmp_path.glob(".catalog.building.*"))


def test_reads_and_queries_from_many_threads_share_one_database_and_see_their_own_views(tmp_path):
    """``TableStore.connect`` hands out connections to one in-memory database per process: reads and
    ``query``'s views (TEMP, each connection's own) from eight threads at once neither fail nor mix."""
    import threading

    from forge.storage import tables

    stores = [TableStore(tmp_path / f"d{i}") for i in range(2)]
    for i, store in enumerate(stores):
        store.write("t", pd.DataFrame({"x": [i] * (i + 1)}))
    errors: list[BaseException] = []

    def work(i: int) -> None:
        store = stores[i % 2]
        try:
            for _ in range(25):
                assert len(store.read("t")) == i % 2 + 1
                assert store.query("select sum(x) as s from t")["s"].iloc[0] == (i % 2) * (i % 2 + 1)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    con = stores[0].connect()
    assert con.execute("select count(*) from duckdb_views() where not internal").fetchone()[0] == 0
    assert tables._SCRATCH is not None and tables._SCRATCH[0] == os.getpid()
