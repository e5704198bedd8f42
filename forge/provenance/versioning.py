"""Content hashes that become Dagster ``code_version``s and per-row ``prompt_hash``es.

An asset's code version is the hash of what decides its output: a version string for
its logic, the prompt files it renders and the configuration slice it reads. Editing
any of them changes the hash, so the UI marks that asset and its descendants unsynced.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def stable_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def content_hash(*parts: Any, files: list[str | Path] | tuple = (), length: int = 12) -> str:
    """Short hash of JSON-able ``parts`` plus the bytes of ``files`` (order-insensitive by path)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(stable_json(p).encode())
    for f in sorted(Path(x) for x in files):
        h.update(str(f.name).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:length]


def spec_parts(value: Any) -> Any:
    """A spec as JSON-able parts for ``content_hash``: dataclasses by field, enums by value, and a
    callable by its qualified name and source (``repr`` of a function holds its memory address, so
    a code version taken from it would differ in every process)."""
    import dataclasses
    import enum
    import inspect

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: spec_parts(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): spec_parts(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [spec_parts(v) for v in value]
        return sorted(items, key=stable_json) if isinstance(value, set | frozenset) else items
    if callable(value):
        name = f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', type(value).__name__)}"
        try:
            return {"callable": name, "source": sha256_bytes(inspect.getsource(value).encode())[:16]}
        except (OSError, TypeError):
            return {"callable": name}
    return value


def _is_volatile(name: str, dtype: Any) -> bool:
    """A ``*_at`` timestamp says when a row was made (listed_at, fetched_at), not what it holds."""
    import pandas as pd

    return name.endswith("_at") and pd.api.types.is_datetime64_any_dtype(dtype)


def _frame_bytes(df: Any) -> bytes:
    """The rows as Arrow IPC bytes (deterministic for equal rows and types); JSON when Arrow
    cannot infer a column's type."""
    import pyarrow as pa

    try:
        table = pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        return df.to_json(orient="split", index=False, date_format="iso", default_handler=str).encode()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def rows_version(tables: Any, length: int = 16) -> str:
    """A data version from what an asset wrote: ``{table: {partition: frame}}`` hashed by table,
    partition, columns, types and rows, leaving out ``*_at`` timestamps. Equal rows give the
    same version, so Dagster keeps descendants Synced after a re-run that changed nothing."""
    h = hashlib.sha256()
    for table in sorted(tables):
        for part in sorted(tables[table]):
            df = tables[table][part]
            keep = [c for c in df.columns if not _is_volatile(str(c), df[c].dtype)]
            h.update(stable_json([table, part, keep, [str(df[c].dtype) for c in keep]]).encode())
            h.update(_frame_bytes(df[keep]))
    return h.hexdigest()[:length]
