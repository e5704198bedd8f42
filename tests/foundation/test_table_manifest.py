"""Table files are never replaced in place (forge/storage/manifest.py): a write adds a file and
swaps the table's manifest, the catalog names the new file set at the next publish, and a file a
reader may hold is deleted only after the grace period (``SUBTEXT_TABLE_GRACE_S``). The load test
is tests/foundation/test_publish_under_load.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from forge.storage import TableStore, manifest, open_catalog, refresh_catalog

ROOT = Path(__file__).resolve().parents[2]


def test_a_rewrite_leaves_the_file_a_reader_was_given_untouched(tmp_path):
    store = TableStore(tmp_path)
    store.write("t", pd.DataFrame({"a": [1, 2]}), "p")
    given = store.files("t")
    store.write("t", pd.DataFrame({"a": [9]}), "p")  # a re-run of the partition
    assert pq.read_table(given[0]).column("a").to_pylist() == [1, 2]  # same path, same bytes
    assert store.files("t") != given and store.parts("t") == ["p"]
    assert store.read("t")["a"].tolist() == [9]  # one live file per partition: no duplicate rows
    assert store.part_path("t", "p") == store.files("t")[0]
    assert not store.part_path("t", "gone").exists()


def test_the_catalog_shows_one_publish_at_a_time_and_a_held_connection_keeps_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv(manifest.GRACE_ENV, "3600")
    store = TableStore(tmp_path)
    store.write("t", pd.DataFrame({"a": [1]}), "p")
    store.write("t", pd.DataFrame({"a": [2]}), "q")
    refresh_catalog(store)
    held = open_catalog(store)
    store.write("t", pd.DataFrame({"a": [10]}), "p")
    store.write("t", pd.DataFrame({"a": [20]}), "q")
    with open_catalog(store) as con:  # written, not yet published: the catalog still shows the last publish
        assert con.execute("select sum(a) from t").fetchone()[0] == 3
    refresh_catalog(store)
    # a new connection in the same process sees the publish, although another one is still open
    with open_catalog(store) as con:
        assert con.execute("select sum(a) from t").fetchone()[0] == 30
    assert held.execute("select sum(a) from t").fetchone()[0] == 3  # its files are kept for the grace period
    held.close()


def test_the_grace_period_starts_when_no_catalog_names_the_file_any_more(tmp_path, monkeypatch):
    """A file retired long ago but still named by the catalog in place (no publish since) is not
    deleted by the publish that replaces that catalog: a reader may have just opened it."""
    monkeypatch.setenv(manifest.GRACE_ENV, "1")
    store = TableStore(tmp_path)
    store.write("t", pd.DataFrame({"a": [1]}), "p")
    refresh_catalog(store)
    store.write("t", pd.DataFrame({"a": [2]}), "p")  # retires the file the catalog names
    time.sleep(1.2)  # longer ago than the grace period
    held = open_catalog(store)
    refresh_catalog(store)
    assert held.execute("select a from t").fetchall() == [(1,)]
    held.close()
    time.sleep(1.2)
    refresh_catalog(store)  # now its grace period is over
    assert [p.name for p in store.table_dir("t").glob("*.parquet")] == [store.files("t")[0].name]


def test_a_table_written_before_manifests_is_read_and_then_rewritten_safely(tmp_path, monkeypatch):
    store = TableStore(tmp_path)
    store.table_dir("t").mkdir(parents=True)
    for part, a in (("b-0000", 1), ("b-0001", 2)):  # the old layout: <part>.parquet, no manifest
        pq.write_table(pa.table({"a": [a]}), store.table_dir("t") / f"{part}.parquet")
    assert store.parts("t") == ["b-0000", "b-0001"] and sorted(store.read("t")["a"]) == [1, 2]
    store.write("t", pd.DataFrame({"a": [5]}), "b-0000")
    assert sorted(store.read("t")["a"]) == [2, 5] and store.parts("t") == ["b-0000", "b-0001"]
    assert (store.table_dir("t") / "b-0000.parquet").exists()  # retired, not deleted: a reader may hold it
    monkeypatch.setenv(manifest.GRACE_ENV, "0")
    refresh_catalog(store)
    assert not (store.table_dir("t") / "b-0000.parquet").exists()
    with open_catalog(store) as con:
        assert sorted(r[0] for r in con.execute("select a from t").fetchall()) == [2, 5]


def test_files_a_killed_write_left_are_never_read_and_go_after_the_grace_period(tmp_path, monkeypatch):
    monkeypatch.setenv(manifest.GRACE_ENV, "60")
    store = TableStore(tmp_path)
    store.write("t", pd.DataFrame({"a": [1]}), "p")
    d = store.table_dir("t")
    old_data, old_tmp = d / manifest.new_file_name("p"), d / ".p.abc123.tmp"  # killed before the manifest swap
    fresh = d / manifest.new_file_name("p")  # a write in flight right now
    for path in (old_data, fresh):
        pq.write_table(pa.table({"a": [666]}), path)
    old_tmp.write_bytes(b"half a parquet file")
    past = time.time() - 120
    os.utime(old_data, (past, past))
    os.utime(old_tmp, (past, past))
    assert store.read("t")["a"].tolist() == [1]
    refresh_catalog(store)
    assert not old_data.exists() and not old_tmp.exists() and fresh.exists()
    with open_catalog(store) as con:
        assert con.execute("select a from t").fetchall() == [(1,)]


def test_a_dropped_partition_leaves_the_catalog_at_its_next_publish(tmp_path):
    store = TableStore(tmp_path)
    store.write("t", pd.DataFrame({"a": [1]}), "p")
    store.write("t", pd.DataFrame({"a": [2]}), "q")
    refresh_catalog(store)
    dropped = store.part_path("t", "p")
    assert store.delete_part("t", "p") and not store.delete_part("t", "p")
    assert store.parts("t") == ["q"] and dropped.exists()
    refresh_catalog(store)
    with open_catalog(store) as con:
        assert con.execute("select a from t").fetchall() == [(2,)]


def test_writers_in_two_processes_lose_no_partition(tmp_path):
    code = """
import sys
sys.path.insert(0, {root!r})
import pandas as pd
from forge.storage import TableStore, refresh_catalog
store = TableStore({data!r})
for i in range(15):
    for part in ("{who}0", "{who}1"):
        store.write("t", pd.DataFrame({{"who": ["{who}"], "i": [i]}}), part)
    refresh_catalog(store)
"""
    procs = [
        subprocess.Popen([sys.executable, "-c", code.format(root=str(ROOT), data=str(tmp_path), who=who)])
        for who in ("a", "b")
    ]
    for p in procs:
        assert p.wait(timeout=300) == 0
    store = TableStore(tmp_path)
    assert store.parts("t") == ["a0", "a1", "b0", "b1"]
    df = store.read("t")
    assert sorted(df["who"]) == ["a", "a", "b", "b"] and set(df["i"]) == {14}
    with open_catalog(store) as con:
        assert con.execute("select count(*) from t").fetchone()[0] == 4


@pytest.mark.parametrize("value", ["soon", "-5", "nan"])
def test_a_bad_grace_setting_is_refused_before_the_catalog_changes(tmp_path, monkeypatch, value):
    store = TableStore(tmp_path)
    store.write("t", pd.DataFrame({"a": [1]}), "p")
    refresh_catalog(store)
    before = store.catalog_path.stat().st_ino
    store.write("t", pd.DataFrame({"a": [2]}), "p")
    monkeypatch.setenv(manifest.GRACE_ENV, value)
    with pytest.raises(ValueError, match=manifest.GRACE_ENV):
        refresh_catalog(store)
    assert store.catalog_path.stat().st_ino == before and len(list(store.table_dir("t").glob("*.parquet"))) == 2
