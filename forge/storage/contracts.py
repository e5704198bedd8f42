"""Data contracts: one YAML file per table in ``data_contracts/``.

A contract names each column's type, nullability, allowed range or values, and the
columns that must be unique together. It is used three ways: to cast a frame to a
stable Arrow schema before writing (so partitions written by different runs agree), to
validate rows (blocking asset checks), and to show the column schema in the Dagster UI.

Contract format::

    table: frames
    description: ...
    unique: [frame_id]            # optional, columns unique together
    columns:
      - {name: frame_id, type: string, nullable: false, description: ...}
      - {name: width, type: int64, min: 1}
      - {name: kind, type: string, values: [video_frame, image]}
      - {name: benchmark, type: string, values: registered_benchmarks}   # a named set, resolved when validating

Named value sets (``DYNAMIC_VALUES``) keep lists that grow elsewhere out of the YAML: the
benchmark names, so a new benchmark never edits a contract. A table not in ``data_contracts/``
belongs to a registered benchmark, whose package holds its own contracts folder
(``BenchmarkSpec.contracts_dir``). Storage sits below the benchmarks, so it never asks the
registry: ``forge.benchmarks.registry`` hands it both, as functions read when a contract is
looked up (``hand_benchmarks``), so a benchmark registered later is seen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from .yaml_files import read_yaml

CONTRACTS_DIR = Path(__file__).resolve().parents[2] / "data_contracts"

ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int64": pa.int64(),
    "int32": pa.int32(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "list<string>": pa.list_(pa.string()),
    "list<int64>": pa.list_(pa.int64()),
    "list<float64>": pa.list_(pa.float64()),
    # JSON documents are stored as strings; DuckDB reads them with json functions.
    "json": pa.string(),
}


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    nullable: bool = True
    description: str = ""
    min: float | None = None
    max: float | None = None
    values: tuple[Any, ...] | str | None = None  # a str names a set in DYNAMIC_VALUES

    def allowed(self) -> set[Any] | None:
        if self.values is None:
            return None
        return set(DYNAMIC_VALUES[self.values]()) if isinstance(self.values, str) else set(self.values)


@dataclass
class _Benchmarks:
    """What the contracts know of the registered benchmarks: nothing until the registry hands it."""

    names: Callable[[], Iterable[str]] = tuple
    contract_dirs: Callable[[], Iterable[Path]] = tuple


_BENCHMARKS = _Benchmarks()


def hand_benchmarks(names: Callable[[], Iterable[str]], contract_dirs: Callable[[], Iterable[Path]]) -> None:
    """Tell the contracts where the registered benchmarks' names and contract folders come from
    (``forge.benchmarks.registry`` does, once): the ``registered_benchmarks`` value set and the
    folders searched for a table outside ``data_contracts/``."""
    _BENCHMARKS.names, _BENCHMARKS.contract_dirs = names, contract_dirs


def _benchmark_names() -> tuple[str, ...]:
    return tuple(_BENCHMARKS.names())


def _benchmark_dirs() -> list[Path]:
    return [d for d in _BENCHMARKS.contract_dirs() if d != CONTRACTS_DIR]


DYNAMIC_VALUES = {"registered_benchmarks": _benchmark_names}


@dataclass(frozen=True)
class Contract:
    table: str
    columns: tuple[Column, ...]
    unique: tuple[str, ...] = ()
    description: str = ""
    path: Path | None = field(default=None, compare=False)

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, ARROW_TYPES[c.type], nullable=c.nullable) for c in self.columns])

    def conform(self, df: pd.DataFrame) -> pd.DataFrame:
        """Columns in contract order, missing nullable columns added as nulls.

        An empty frame (a batch with nothing to do) conforms to an empty table with every
        contract column, whatever columns it had.
        """
        if df.empty:
            return pd.DataFrame({c: pd.Series([], dtype=object) for c in self.column_names})
        out = df.copy()
        for c in self.columns:
            if c.name not in out.columns:
                if not c.nullable:
                    raise ValueError(f"{self.table}: required column {c.name!r} missing")
                out[c.name] = None
        return out[self.column_names]

    def validate(self, df: pd.DataFrame) -> list[str]:
        """Every violation as a readable sentence; empty list when the frame conforms."""
        problems: list[str] = []
        missing = [c.name for c in self.columns if c.name not in df.columns]
        if missing:
            problems.append(f"missing columns: {missing}")
        extra = [c for c in df.columns if c not in self.column_names]
        if extra:
            problems.append(f"columns not in contract: {extra}")
        for c in self.columns:
            if c.name not in df.columns:
                continue
            s = df[c.name]
            nulls = int(s.isna().sum()) if not c.type.startswith("list") else int(s.map(lambda v: v is None).sum())
            if not c.nullable and nulls:
                problems.append(f"{c.name}: {nulls} null value(s) in a non-nullable column")
            present = s[~s.isna()] if not c.type.startswith("list") else s[s.map(lambda v: v is not None)]
            if present.empty:
                continue
            if c.type in ("int64", "int32", "float64"):
                numeric = pd.to_numeric(present, errors="coerce")
                bad = int(numeric.isna().sum())
                if bad:
                    problems.append(f"{c.name}: {bad} non-numeric value(s)")
                if c.min is not None and (numeric < c.min).any():
                    problems.append(f"{c.name}: {int((numeric < c.min).sum())} value(s) below {c.min}")
                if c.max is not None and (numeric > c.max).any():
                    problems.append(f"{c.name}: {int((numeric > c.max).sum())} value(s) above {c.max}")
            if c.values is not None:
                allowed = c.allowed()
                if c.type.startswith("list"):
                    bad_vals = sorted({str(v) for lst in present for v in lst if v not in allowed})
                else:
                    bad_vals = sorted({str(v) for v in present if v not in allowed})
                if bad_vals:
                    problems.append(f"{c.name}: values outside {sorted(map(str, allowed))}: {bad_vals[:5]}")
        if self.unique and all(u in df.columns for u in self.unique) and len(df):
            dups = int(df.duplicated(subset=list(self.unique)).sum())
            if dups:
                problems.append(f"{dups} duplicate row(s) on unique key {list(self.unique)}")
        return problems


def parse_contract(doc: dict[str, Any], path: Path | None = None) -> Contract:
    cols = []
    for raw in doc["columns"]:
        if raw["type"] not in ARROW_TYPES:
            raise ValueError(f"{doc['table']}.{raw['name']}: unknown type {raw['type']!r}")
        values = raw.get("values")
        if isinstance(values, str) and values not in DYNAMIC_VALUES:
            raise ValueError(f"{doc['table']}.{raw['name']}: unknown value set {values!r}")
        cols.append(
            Column(
                name=raw["name"],
                type=raw["type"],
                nullable=bool(raw.get("nullable", True)),
                description=raw.get("description", ""),
                min=raw.get("min"),
                max=raw.get("max"),
                values=values if values is None or isinstance(values, str) else tuple(values),
            )
        )
    return Contract(
        table=doc["table"],
        columns=tuple(cols),
        unique=tuple(doc.get("unique", ())),
        description=doc.get("description", ""),
        path=path,
    )


@cache
def load_contract(table: str, contracts_dir: Path = CONTRACTS_DIR) -> Contract:
    path = contracts_dir / f"{table}.yaml"
    if not path.exists() and contracts_dir == CONTRACTS_DIR:
        path = next((d / f"{table}.yaml" for d in _benchmark_dirs() if (d / f"{table}.yaml").is_file()), path)
    if not path.exists():
        raise FileNotFoundError(
            f"no data contract for table {table!r} at {path}"
            + ("" if contracts_dir != CONTRACTS_DIR or _benchmark_dirs() else " (nor any benchmark's: none handed yet)")
        )
    return parse_contract(read_yaml(path), path)


def all_contracts(contracts_dir: Path | None = None) -> dict[str, Contract]:
    """Every contract in ``contracts_dir``; by default the shared ones (``data_contracts/``) and
    each registered benchmark's own (its package's ``contracts/``)."""
    if contracts_dir is not None:
        return {p.stem: load_contract(p.stem, contracts_dir) for p in sorted(contracts_dir.glob("*.yaml"))}
    dirs = [CONTRACTS_DIR, *_benchmark_dirs()]
    return {p.stem: load_contract(p.stem, d) for d in dirs for p in sorted(d.glob("*.yaml"))}
