"""Dataset card pieces: label distributions leave identifiers out."""

import json

import pandas as pd

from forge.export.card import label_distributions


def test_label_distributions_leave_out_identifiers():
    rows = [
        {"verdict": "yes" if i % 3 else "no", "frame_id": f"f{i}", "pair_key": f"k{i % 2}", "caption": f"c{i}"}
        for i in range(20)
    ]
    got = label_distributions(pd.DataFrame({"labels": [json.dumps(r) for r in rows]}))
    assert got["verdict"] == {"yes": 13, "no": 7}
    assert "frame_id" not in got and "pair_key" not in got  # named like an identifier
    assert "caption" not in got  # every value distinct: an identifier in all but name
