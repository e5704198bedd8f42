"""DuckDB anywhere: the catalog's views read absolute paths (any client, any directory), a copied
data dir is re-pointed at itself on first open, and `make query` takes any SQL the docs print
(several lines, double quotes, a file) and writes only the result on stdout."""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from forge.storage import TableStore, open_catalog, refresh_catalog

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def data_dir(tmp_path):
    store = TableStore(tmp_path / "data")
    store.write("rejects", pd.DataFrame({"stage": ["frames", "frames"], "reason": ["blurry", "tiny"]}), "b-0000")
    refresh_catalog(store)
    return store.data_dir


def test_a_plain_client_reads_the_tables_from_any_directory(data_dir, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with duckdb.connect(str(data_dir / "catalog.duckdb"), read_only=True) as con:
        assert con.execute("select count(*) from rejects").fetchone()[0] == 2


def test_a_copied_data_dir_reads_its_own_tables(data_dir, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(data_dir, copy)
    shutil.rmtree(data_dir)  # the original is gone: the copy must not depend on it
    with open_catalog(copy) as con:  # re-points the copy's views at the copy
        assert con.execute("select count(*) from rejects").fetchone()[0] == 2
    with duckdb.connect(str(copy / "catalog.duckdb"), read_only=True) as con:  # and for a bare client too
        assert con.execute("select count(*) from rejects").fetchone()[0] == 2


def _make_query(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    stamp = ROOT / ".venv" / f".installed-{hashlib.sha1((ROOT / 'pyproject.toml').read_bytes()).hexdigest()[:12]}"
    if not stamp.exists() or shutil.which("make") is None:
        pytest.skip("the venv is not set up for this pyproject.toml (make setup would install)")
    env = {**os.environ, "SUBTEXT_DATA_DIR": str(data_dir)}
    # as from a user's shell: under `make test` the outer make's level would make this one print
    # "make[1]: Entering directory" before it reads the Makefile
    for var in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS"):
        env.pop(var, None)
    return subprocess.run(["make", "query", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_make_query_takes_the_docs_sql_and_prints_only_results(data_dir, tmp_path):
    sql = 'select stage, "reason", count(*) as "n rows"\nfrom rejects  -- by reason\ngroup by all order by 2;'
    proc = _make_query(data_dir, f"Q={sql}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.lstrip().startswith("┌") and "make" not in proc.stdout, proc.stdout
    assert "blurry" in proc.stdout and "n rows" in proc.stdout

    script = tmp_path / "q.sql"
    script.write_text(
        "-- two statements: the last one's rows are shown\nselect 1;\nselect reason from rejects\nwhere reason = 'tiny';\n"
    )
    proc = _make_query(data_dir, f"F={script}")
    assert proc.returncode == 0, proc.stderr
    assert "tiny" in proc.stdout and "blurry" not in proc.stdout and "make" not in proc.stdout

    bad = _make_query(data_dir, "Q=select * from nowhere")
    assert bad.returncode != 0 and bad.stderr.count("error: Catalog Error") == 1 and bad.stdout == ""
