"""Typed ``labels`` / ``extra`` for exports: JSON objects become Arrow structs, so the Hub and
``datasets`` show and load them as fields (lists, numbers, booleans), not as JSON strings.

One struct type per column and export, the union of every item's keys (a key an item lacks is
null there), so every split file has the same schema. A key whose values do not share one type
(a number here, a text there) and nested objects are kept as JSON text, the only lossless
common type; ``typed_struct`` says which keys those are.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from forge.items.cells import as_object

_SCALARS = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string()}
_EMPTY_LIST = pa.list_(pa.null())  # [] fits any list type
_MIXED = pa.null()  # an object or a mixed list: kept as JSON text


def _kind(v: Any) -> pa.DataType | None:
    """The Arrow type of one JSON value (None for null)."""
    if v is None:
        return None
    if type(v) in _SCALARS:
        return _SCALARS[type(v)]
    if isinstance(v, list):
        inner = {_kind(x) for x in v} - {None}
        if not inner:
            return _EMPTY_LIST
        if inner == {pa.int64(), pa.float64()}:
            return pa.list_(pa.float64())
        if len(inner) == 1 and next(iter(inner)) in _SCALARS.values():
            return pa.list_(next(iter(inner)))
    return _MIXED


def _key_type(values: Iterable[Any]) -> tuple[pa.DataType, bool]:
    """(type, as_json) for one key's values across items."""
    kinds = {_kind(v) for v in values} - {None}
    if kinds == {pa.int64(), pa.float64()}:
        return pa.float64(), False
    if kinds == {pa.list_(pa.int64()), pa.list_(pa.float64())}:
        return pa.list_(pa.float64()), False
    if _EMPTY_LIST in kinds:
        kinds.discard(_EMPTY_LIST)
        if not kinds:
            return pa.list_(pa.string()), False
        if not all(pa.types.is_list(k) for k in kinds):
            return pa.string(), True
    if not kinds:
        return pa.string(), False
    if len(kinds) == 1 and _MIXED not in kinds:
        return next(iter(kinds)), False
    return pa.string(), True


def typed_struct(objects: list[dict[str, Any]]) -> tuple[pa.DataType | None, set[str]]:
    """The struct type for these objects (None when no item has a key) and the keys kept as JSON."""
    keys = sorted({k for o in objects for k in o})
    if not keys:
        return None, set()
    fields, as_json = [], set()
    for k in keys:
        typ, js = _key_type(o.get(k) for o in objects)
        fields.append(pa.field(k, typ))
        if js:
            as_json.add(k)
    return pa.struct(fields), as_json


def conform(obj: dict[str, Any], typ: pa.StructType, as_json: set[str]) -> dict[str, Any]:
    """One item's object in the struct's shape: every key, JSON text where the key needs it."""
    out = {}
    for f in typ:
        v = obj.get(f.name)
        if v is not None and f.name in as_json and not isinstance(v, str):
            v = json.dumps(v, ensure_ascii=False, default=str)
        elif v is not None and pa.types.is_floating(f.type) and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        elif v is not None and f.type == pa.string() and not isinstance(v, str):
            v = str(v)
        out[f.name] = v
    return out


def restore(obj: Any, as_json: Iterable[str] = ()) -> dict[str, Any]:
    """An exported struct back as the item's object: keys the item lacked (null) dropped, JSON
    text keys decoded (what evaluation reads, as before typing)."""
    if not isinstance(obj, dict):
        return as_object(obj)
    out = {}
    for k, v in obj.items():
        if v is None:
            continue
        if k in as_json and isinstance(v, str):
            try:
                v = json.loads(v)
            except ValueError:
                pass
        out[k] = v.tolist() if hasattr(v, "tolist") and not isinstance(v, str) else v
    return out
