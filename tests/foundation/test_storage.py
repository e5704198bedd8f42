import duckdb
import pandas as pd
import pytest

from forge.contracts import load_contract, parse_contract
from forge.storage import RejectLog, TableStore, refresh_catalog


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
    contract = parse_contract({"table": "t", "columns": [{"name": "a", "type": "int64"}, {"name": "b", "type": "string", "nullable": False}]})
    with pytest.raises(ValueError):
        store.write("t", pd.DataFrame({"a": [2]}), "p", schema=contract.arrow_schema())
    assert list(store.read("t")["a"]) == [1]


def test_contract_validation_reports_each_violation():
    c = parse_contract({
        "table": "x", "unique": ["id"],
        "columns": [
            {"name": "id", "type": "string", "nullable": False},
            {"name": "score", "type": "float64", "min": 0, "max": 1},
            {"name": "kind", "type": "string", "values": ["a", "b"]},
        ],
    })
    good = pd.DataFrame({"id": ["1", "2"], "score": [0.1, 1.0], "kind": ["a", "b"]})
    assert c.validate(good) == []
    bad = pd.DataFrame({"id": ["1", "1", None], "score": [-1, 2, 0.5], "kind": ["a", "z", "b"], "extra": [1, 2, 3]})
    problems = " | ".join(c.validate(bad))
    assert "null" in problems and "below 0" in problems and "above 1" in problems
    assert "values outside" in problems and "duplicate" in problems and "not in contract" in problems


def test_every_contract_parses_and_has_a_schema():
    from forge.contracts import all_contracts

    contracts = all_contracts()
    assert "rejects" in contracts and "frames" in contracts
    for name, c in contracts.items():
        assert c.table == name, f"{name}.yaml declares table {c.table}"
        assert len(c.arrow_schema()) == len(c.columns)


def test_catalog_views_track_new_partitions_and_empty_tables(tmp_path):
    store = TableStore(tmp_path)
    refresh_catalog(store)
    with duckdb.connect(str(store.catalog_path), read_only=True) as con:
        # a contract table with no files yet is an empty, typed view
        assert con.execute("select count(*) from rejects").fetchone()[0] == 0
    log = RejectLog("download", "b-0000")
    log.add("u1", "dead_url", "HTTPError", "404")
    store.write("rejects", load_contract("rejects").conform(log.frame()), log.part_name(),
                schema=load_contract("rejects").arrow_schema())
    refresh_catalog(store)
    store.write("rejects", load_contract("rejects").conform(log.frame()).assign(item_id="u2"), "x__y",
                schema=load_contract("rejects").arrow_schema())
    # no refresh needed: the view globs partition files
    with duckdb.connect(str(store.catalog_path), read_only=True) as con:
        rows = con.execute("select item_id, reason from rejects order by item_id").fetchall()
    assert rows == [("u1", "dead_url"), ("u2", "dead_url")]


def test_catalog_refresh_does_not_fail_while_user_holds_it(tmp_path):
    store = TableStore(tmp_path)
    refresh_catalog(store)
    import subprocess, sys, time
    holder = subprocess.Popen([sys.executable, "-c",
        f"import duckdb,time; c=duckdb.connect({str(store.catalog_path)!r}); print('ok', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ok"
        t0 = time.perf_counter()
        assert refresh_catalog(store, retries=1) == []  # gives up, does not raise
        assert time.perf_counter() - t0 < 60
    finally:
        holder.kill()


def test_empty_frame_conforms_to_an_empty_table_with_every_column(tmp_path):
    c = parse_contract({"table": "x", "columns": [{"name": "id", "type": "string", "nullable": False},
                                                   {"name": "n", "type": "int64"}]})
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
