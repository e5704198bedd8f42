"""What a Dagster-free stage hands its asset besides tables: check outcomes and metadata values
marked as markdown or a path (``assets/splits/factory.py`` turns them into Dagster's types)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd


class Markdown(str):
    """A metadata value shown as markdown."""


class FilePath(str):
    """A metadata value shown as a path."""


@dataclass
class Check:
    name: str
    passed: bool
    severity: str = "warn"  # warn | error
    metadata: dict[str, Any] = field(default_factory=dict)


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
