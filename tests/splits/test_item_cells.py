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


READERS = ("as_list", "as_json", "as_object", "jload")  # the names a private copy of the reader went by


def private_readers(root) -> list[str]:
    """``path:line name`` of every definition or alias of a cell reader outside forge/items/cells.py."""
    import ast

    out = []
    for path in sorted([*(root / "forge").rglob("*.py"), *(root / "assets").rglob("*.py")]):
        if path == root / "forge" / "items" / "cells.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.name] if isinstance(node, ast.FunctionDef) and node.col_offset == 0 else []
            if isinstance(node, ast.Assign) and node.col_offset == 0:
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            out += [f"{path.relative_to(root)}:{node.lineno} {n}" for n in names if n in READERS]
    return out


def test_the_cells_are_read_by_one_reader(tmp_path):
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert private_readers(root) == []
    (tmp_path / "forge" / "review").mkdir(parents=True)
    (tmp_path / "assets").mkdir()
    (tmp_path / "forge" / "review" / "items.py").write_text("def as_json(v):\n    return {}\n\njload = as_json\n")
    assert private_readers(tmp_path) == ["forge/review/items.py:1 as_json", "forge/review/items.py:4 jload"]
