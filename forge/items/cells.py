"""How an item row's list and JSON cells read back: the one reader every stage uses.

Items tables store ``options``, ``references``, ``media_paths`` (and recipe tables their own
lists) as Parquet lists, which DuckDB and pandas hand back as numpy arrays, lists or, for a null,
None / NaN / ``pd.NA``; ``labels`` and ``extra`` are JSON text (a dict where a frame was built in
memory). ``as_list`` and ``as_object`` turn any of these into plain Python values, never raising
on an empty or unreadable cell: a missing list is ``[]``, a missing or unreadable object ``{}``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd


def missing(v: Any) -> bool:
    """None, NaN or pd.NA (DuckDB reads nulls as any of them); never true for a list."""
    if v is None or v is pd.NA:
        return True
    return isinstance(v, float) and math.isnan(v)


def as_list(v: Any) -> list[Any]:
    """A list cell as a list of plain values (numpy scalars as Python ones); ``[]`` when missing;
    a lone string is a list of one (a row written by hand, never split into characters)."""
    if missing(v):
        return []
    if isinstance(v, str | bytes):
        return [v]
    return [x.item() if isinstance(x, np.generic) else x for x in v]


def as_object(v: Any) -> dict[str, Any]:
    """A JSON-object cell (``labels``, ``extra``: JSON text, or a mapping) as a new dict; ``{}``
    when missing, empty, unreadable or not an object."""
    if isinstance(v, Mapping):
        return dict(v)
    if not isinstance(v, str) or not v.strip():
        return {}
    try:
        out = json.loads(v)
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}
