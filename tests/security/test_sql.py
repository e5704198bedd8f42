"""SQL with hostile ids: values are bound as parameters, identifiers and paths quoted."""

from __future__ import annotations

import pandas as pd
import pytest

from forge.media.batch import batch_rows
from forge.storage import TableStore, quote_ident, quote_literal

HOSTILE = [
    "x' or '1'='1",
    "a-0000' union select * from read_csv('/etc/passwd') --",
    'x"; drop table t; --',
    "'); copy (select 1) to '/tmp/pwned.csv'; --",
]


@pytest.fixture
def store(tmp_path) -> TableStore:
    s = TableStore(tmp_path / "data")
    rows = pd.DataFrame({"item_id": ["i1", "i2", "i3"], "batch": ["a-0000", "a-0000", "b-0000"], "kind": ["image"] * 3})
    s.write("source_items", rows, "all")
    return s


@pytest.mark.parametrize("batch", HOSTILE)
def test_hostile_batch_key_matches_nothing(store, batch):
    assert batch_rows(store, "source_items", batch).empty
    assert store.read_batch("source_items", batch).empty


def test_real_batch_key_still_matches(store):
    assert sorted(batch_rows(store, "source_items", "a-0000")["item_id"]) == ["i1", "i2"]


def test_hostile_value_through_read_params(store):
    assert store.read("source_items", where="item_id = ?", params=["i1' or '1'='1"]).empty


def test_quoting_helpers_round_trip(tmp_path):
    import duckdb

    name = "we\"ird's col"
    view = 'v"; drop'
    path = tmp_path / "o'brien" / "x.parquet"
    path.parent.mkdir()
    pd.DataFrame({name: [1, 2]}).to_parquet(path)
    with duckdb.connect() as con:
        con.execute(
            f"create view {quote_ident(view)} as select {quote_ident(name)} from "
            f"read_parquet({quote_literal(str(path))})"
        )
        assert con.execute(f"select count(*) from {quote_ident(view)}").fetchone()[0] == 2
    s = TableStore(tmp_path / "o'brien data")
    s.write("t", pd.DataFrame({name: [1]}), "all")
    assert s.read("t", columns=[name])[name].tolist() == [1]
    assert s.query("select count(*) n from t")["n"][0] == 1  # views over a data dir with a quote in its path
