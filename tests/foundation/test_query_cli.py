"""``python -m forge.console.query`` (what ``make query`` runs): usage, one-line errors, results, tables."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from forge.storage import TableStore, refresh_catalog

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    store = TableStore(tmp_path_factory.mktemp("data"))
    store.write("rejects", pd.DataFrame({"stage": ["frames", "frames"], "reason": ["blurry", "blurry"]}), "b-0000")
    refresh_catalog(store)
    return store.data_dir


def _query(data_dir, *args):
    return subprocess.run(
        [sys.executable, "-m", "forge.console.query", "--data-dir", str(data_dir), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_no_sql_prints_usage_and_fails(data_dir):
    proc = _query(data_dir, "query")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("usage: make query Q=")
    assert _query(data_dir).returncode == 2


def test_sql_error_is_one_line_without_traceback(data_dir):
    proc = _query(data_dir, "query", "select * from no_such_table")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: Catalog Error")
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_missing_catalog_is_an_error(tmp_path):
    proc = _query(tmp_path, "query", "select 1")
    assert proc.returncode == 1 and "no catalog" in proc.stderr


def test_query_and_tables(data_dir):
    proc = _query(data_dir, "query", "select stage, reason, count(*) as n from rejects group by all")
    assert proc.returncode == 0, proc.stderr
    assert "blurry" in proc.stdout and "│" in proc.stdout
    tables = _query(data_dir, "tables")
    assert tables.returncode == 0, tables.stderr
    row = next(line for line in tables.stdout.splitlines() if line.startswith("rejects "))
    assert row.split()[1] == "2"
    assert "frames " in tables.stdout  # contract-only views are listed too
