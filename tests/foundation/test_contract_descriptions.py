"""Every item and export table's columns are described in the UI's column schema, and the
typed preview rounds floats."""

import numpy as np
import pandas as pd
import pytest

from assets.common import column_schema, table_preview
from forge.benchmarks import registry
from forge.storage.contracts import load_contract

# the tables a user reads: each benchmark's items, the gated items, their splits, the exports
# and the scores behind the leaderboards
DESCRIBED = sorted({s.items_table for s in registry.specs()} | {"gated_items", "splits", "exports", "eval_scores"})


@pytest.mark.parametrize("table", DESCRIBED)
def test_every_column_has_a_description_in_the_column_schema(table):
    schema = column_schema(load_contract(table))
    assert [c.name for c in schema.columns if not c.description] == []


def test_typed_preview_rounds_floats_and_keeps_types():
    contract = load_contract("detections")
    df = pd.DataFrame(
        {
            "frame_id": ["f1"],
            "det_index": [np.int64(0)],
            "confidence": [0.123456789],
            "x1": [np.float64(12.3456789)],
            "weights_sha256": [None],
        }
    )
    value = table_preview(df, contract)
    assert [c.name for c in value.schema.columns] == ["frame_id", "det_index", "x1", "confidence", "weights_sha256"]
    assert value.records[0].data == {
        "frame_id": "f1",
        "det_index": 0,
        "x1": 12.3457,
        "confidence": 0.1235,
        "weights_sha256": None,
    }
