"""The items table's columns and the field checks every stage after the recipes shares.

``COMMON_COLUMNS`` are the columns every recipe's items table has (paper-specific ones are
folded into ``extra``); ``field_problem`` says why an item cannot be published (empty field,
answer outside the options, missing media); ``unit_of`` reads the benchmark's unit (e.g. a
pool) from ``labels``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from forge.checks import mcq
from forge.items.cells import as_list, as_object, missing

COMMON_COLUMNS = [
    "item_id",
    "benchmark",
    "task",
    "category",
    "question",
    "options",
    "option_types",
    "answer",
    "references",
    "media_paths",
    "unit_id",
    "source_item_id",
    "source",
    "channel",
    "batch",
    "labels",
    "backend",
    "model",
    "prompt_hash",
    "lineage",
]
LIST_COLUMNS = ("options", "option_types", "references", "media_paths")


def lst(v: Any) -> list | None:
    """A list column's value as a list (``as_list``); None when missing (an empty list is a value)."""
    return None if missing(v) else as_list(v)


def blank(v: Any) -> bool:
    """Missing, or text that is only white space."""
    return missing(v) or str(v).strip() == ""


def normalise_items(df: pd.DataFrame, benchmark: str) -> pd.DataFrame:
    """The common item columns plus ``extra`` (JSON) holding every paper-specific column."""
    out = df.copy()
    for c in COMMON_COLUMNS:
        if c not in out:
            out[c] = None
    out["benchmark"] = out["benchmark"].where(out["benchmark"].notna(), benchmark)
    for c in LIST_COLUMNS:
        out[c] = out[c].map(lst)
    paper_cols = [c for c in out.columns if c not in COMMON_COLUMNS and c != "extra"]

    def extra(row: pd.Series) -> str | None:
        base: dict[str, Any] = {}
        if "extra" in row and not blank(row["extra"]):
            try:
                base = json.loads(row["extra"]) if isinstance(row["extra"], str) else dict(row["extra"])
            except (ValueError, TypeError):
                base = {"extra": str(row["extra"])}
        for c in paper_cols:
            v = row[c]
            if isinstance(v, np.ndarray):
                v = v.tolist()
            if isinstance(v, (list, dict)) or not blank(v):
                base[c] = v
        return json.dumps(base, ensure_ascii=False, default=str) if base else None

    out["extra"] = out.apply(extra, axis=1) if len(out) else pd.Series(dtype=object)
    out["item_id"] = out["item_id"].astype(str)
    return out[COMMON_COLUMNS + ["extra"]].reset_index(drop=True)


def answer_letters(answer: Any) -> list[int] | None:
    """``"A,C"`` → [0, 2]; None when the answer is not option letters."""
    if blank(answer):
        return None
    try:
        return [mcq.letter_index(p) for p in str(answer).split(",") if p.strip()] or None
    except ValueError:
        return None


def is_mcq(row: Any) -> bool:
    opts = lst(row["options"])
    letters = answer_letters(row["answer"])
    return bool(opts) and len(opts) >= 2 and letters is not None and all(i < len(opts) for i in letters)


def field_problem(row: Any, data_dir: Path | None = None) -> tuple[str, str] | None:
    """(reason, detail) of the first problem that makes an item unpublishable, else None."""
    if blank(row["question"]):
        return "empty_field", "question is empty"
    if blank(row["answer"]) and not lst(row["references"]):
        return "empty_field", "neither an answer nor references"
    if blank(row["category"]):
        return "empty_field", "category is empty"
    opts = lst(row["options"])
    if opts is not None:
        if any(blank(o) for o in opts):
            return "empty_field", "an option is empty"
        types = lst(row["option_types"])
        if types is not None and len(types) != len(opts):
            return "contract_violation", f"{len(opts)} options but {len(types)} option types"
        if len(opts) >= 2:
            letters = answer_letters(row["answer"])
            if letters is None:
                return "contract_violation", f"answer {row['answer']!r} is not option letters"
            if any(i >= len(opts) for i in letters):
                return "contract_violation", f"answer {row['answer']!r} outside {len(opts)} options"
    return media_problem(row, data_dir)


def media_problem(row: Any, data_dir: Path | None) -> tuple[str, str] | None:
    """("media_missing", detail) when a media file of the item is not in the data dir."""
    if data_dir is None:
        return None
    for p in lst(row["media_paths"]) or []:
        if blank(p) or not (Path(data_dir) / str(p)).is_file():
            return "media_missing", f"media file not found: {p}"
    return None


def imported_ids(df: pd.DataFrame) -> set[str]:
    """Ids of items imported from a published release (``origin = imported``; in gated items the
    column is folded into ``extra``)."""
    if df.empty:
        return set()
    if "origin" in df:
        return set(df.loc[df["origin"].eq("imported"), "item_id"].astype(str))
    if "extra" not in df:
        return set()
    out = set()
    for item_id, ex in zip(df["item_id"], df["extra"]):
        if as_object(ex).get("origin") == "imported":
            out.add(str(item_id))
    return out


def unit_of(df: pd.DataFrame, key: str | None) -> dict[str, str]:
    """item_id → unit id: the value of ``key`` in the item's ``labels`` JSON (items without
    it are units of their own). Empty when the benchmark has no unit key."""
    if not key or df.empty:
        return {}
    out: dict[str, str] = {}
    for item_id, labels in zip(df["item_id"], df["labels"]):
        v = as_object(labels).get(key)
        if v is not None and str(v).strip():
            out[str(item_id)] = f"{key}={v}"
    return out
