"""What a row was built from: the set of LLM backends and models behind it, across stages.

A row's own ``backend`` says only who made its last step; re-running one stage with a key
would relabel stub-made upstream content as ``openai``. ``lineage`` closes that hole: it is
the union of the row's own backend/model and those of every LLM call recorded (``llm_calls``)
for the same paper's recipe stages in the row's batch. The batch is the unit every recipe
stage runs on, so the set is a conservative superset: a batch with any stub-made step marks
all its items, and only re-running those stages on a real backend clears it (their calls are
replaced). Exports and cards read this set, never the last label.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pandas as pd

STUB = "stub"


def encode(backends: Iterable[str], models: Iterable[str]) -> str:
    return json.dumps({"backends": sorted({b for b in backends if b}), "models": sorted({m for m in models if m})})


def decode(value: Any) -> dict[str, list[str]]:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return {"backends": [], "models": []}
    d = json.loads(value) if isinstance(value, str) else dict(value)
    return {"backends": list(d.get("backends") or []), "models": list(d.get("models") or [])}


def stage_calls(calls: pd.DataFrame, paper: str, partition: str) -> tuple[set[str], set[str]]:
    """Backends and models of the LLM calls of ``paper``'s recipe stages in ``partition``."""
    if calls is None or calls.empty:
        return set(), set()
    mine = calls[calls["stage"].astype(str).str.startswith(f"{paper}_") & (calls["partition"] == partition)]
    return set(mine["backend"].dropna().astype(str)), set(mine["model"].dropna().astype(str))


def with_lineage(df: pd.DataFrame, backends: set[str], models: set[str]) -> pd.DataFrame:
    """``df`` with a ``lineage`` column: each row's own backend/model plus the given sets."""
    if df.empty:
        return df.assign(lineage=pd.Series([], dtype=object))
    own_b = df["backend"] if "backend" in df else pd.Series([None] * len(df), index=df.index)
    own_m = df["model"] if "model" in df else pd.Series([None] * len(df), index=df.index)
    return df.assign(
        lineage=[
            encode(backends | ({b} if isinstance(b, str) else set()), models | ({m} if isinstance(m, str) else set()))
            for b, m in zip(own_b, own_m)
        ]
    )


def union(
    values: Iterable[Any], fallback_backends: Iterable[Any] = (), fallback_models: Iterable[Any] = ()
) -> tuple[list[str], list[str]]:
    """Union of many ``lineage`` values (plus plain backend/model labels for rows without one)."""
    b, m = set(), set()
    for v in values:
        d = decode(v)
        b |= set(d["backends"])
        m |= set(d["models"])
    b |= {x for x in fallback_backends if isinstance(x, str) and x}
    m |= {x for x in fallback_models if isinstance(x, str) and x}
    return sorted(b), sorted(m)


def touched_by_stub(value: Any) -> bool:
    return STUB in decode(value)["backends"]
