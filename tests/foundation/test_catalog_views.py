"""The catalog's derived views: one view that cannot bind yet costs no other view."""

from __future__ import annotations

import pandas as pd
import pytest

from forge.storage import TableStore, catalog, open_catalog, refresh_catalog


@pytest.fixture
def views(monkeypatch):
    registered: dict[str, str] = {}
    monkeypatch.setattr(catalog, "EXTRA_VIEWS", registered)
    return registered


def test_a_view_over_a_missing_table_skips_alone(tmp_path, views):
    store = TableStore(tmp_path)
    store.write("scores", pd.DataFrame({"model": ["a", "b"], "acc": [0.5, 0.75]}))
    # registered in this order on purpose: the unbindable view comes before the good one
    views["broken_view"] = "select * from table_not_built_yet"
    views["leaderboard"] = "select model, acc from scores order by acc desc"
    made = refresh_catalog(store)
    assert "leaderboard" in made and "broken_view" not in made
    con = open_catalog(store)
    assert con.execute("select model from leaderboard").fetchall() == [("b",), ("a",)]
    assert con.execute("select count(*) from scores").fetchone() == (2,)


def test_the_skipped_view_comes_once_its_table_exists(tmp_path, views):
    store = TableStore(tmp_path)
    store.write("scores", pd.DataFrame({"model": ["a"], "acc": [1.0]}))
    views["later"] = "select count(*) as n from judged"
    assert "later" not in refresh_catalog(store)
    store.write("judged", pd.DataFrame({"x": [1, 2, 3]}))
    assert "later" in refresh_catalog(store)
    assert open_catalog(store).execute("select n from later").fetchone() == (3,)
