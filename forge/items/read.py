"""Reading the tables the after-recipe stages start from: any table, absent = empty, and a
benchmark's items table with the common columns."""

from __future__ import annotations

import pandas as pd

from forge.benchmarks.spec import BenchmarkSpec
from forge.items.fields import COMMON_COLUMNS
from forge.storage import TableStore


def read_table(store: TableStore, table: str, parts: list[str] | None = None) -> pd.DataFrame:
    """A table, or an empty frame when it does not exist (yet). A table that exists but cannot
    be read is an error, never "absent": a leakage audit over nothing would pass."""
    return store.read(table, parts=parts) if store.exists(table) else pd.DataFrame()


def read_items(store: TableStore, spec: BenchmarkSpec) -> pd.DataFrame:
    """``spec``'s items table as the recipe wrote it (gold is a separate step: ``forge.gold``)."""
    df = read_table(store, spec.items_table)
    return df if "item_id" in df.columns else pd.DataFrame(columns=COMMON_COLUMNS)
