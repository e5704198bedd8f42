"""The one reader of an item row's list and JSON cells (forge/items/cells.py): every shape a cell
comes back in from Parquet, DuckDB or a frame built in memory reads as plain Python values."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from forge.items.cells import as_list, as_object, missing
from forge.items.fields import lst


def test_a_parquet_list_cell_reads_as_plain_values(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"options": [["a", "b"], None, []], "spans": [[1, 2], [3], None]}), path)
    df = pd.read_parquet(path)
    assert isinstance(df["options"][0], np.ndarray)  # what the reader is for
    assert [as_list(v) for v in df["options"]] == [["a", "b"], [], []]
    spans = as_list(df["spans"][0])
    assert spans == [1, 2] and all(type(x) is int for x in spans)  # numpy scalars become Python ones
    json.dumps(spans)  # so they serialise


def test_missing_cells_and_a_lone_string():
    for v in (None, float("nan"), pd.NA):
        assert missing(v) and as_list(v) == [] and lst(v) is None and as_object(v) == {}
    assert not missing([]) and lst([]) == []  # an empty list is a value, not a missing one
    assert as_list("only") == ["only"]  # never split into characters
    nested = as_list([np.array([0.1, 0.2]), np.array([0.3, 0.4])])  # boxes: lists of arrays kept as arrays
    assert len(nested) == 2 and list(nested[1]) == [0.3, 0.4]


def test_json_object_cells():
    assert as_object('{"verdict": "Yes", "n": 2}') == {"verdict": "Yes", "n": 2}
    given = {"a": 1}
    got = as_object(given)
    assert got == given and got is not given  # a new dict: a caller's edit never reaches the row
    for bad in ("", "   ", "not json", "[1, 2]", '"text"', 3):
        assert as_object(bad) == {}, bad
