"""A frame as a markdown table, for stage metadata and dataset cards (the stage result itself,
with its ``Markdown`` / ``FilePath`` values and checks, is ``forge/storage/result.py``)."""

from __future__ import annotations

import pandas as pd


def md_table(df: pd.DataFrame) -> str:
    """A frame as a markdown table (index first); ``_none_`` when empty."""
    if df.empty:
        return "_none_"
    cols = [str(c) for c in df.columns]
    head = "| " + " | ".join([df.index.name or ""] + cols) + " |"
    sep = "|" + "---|" * (len(cols) + 1)
    rows = [
        "| " + " | ".join([str(i)] + [str(v) for v in r]) + " |" for i, r in zip(df.index, df.itertuples(index=False))
    ]
    return "\n".join([head, sep] + rows)
