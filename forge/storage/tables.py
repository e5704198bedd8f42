"""Parquet tables written atomically per partition, the storage every stage shares.

Layout: ``<data_dir>/tables/<table>/<part>.parquet``. One file per partition (or per
``stage__partition`` for shared tables such as ``rejects`` and ``llm_calls``), so
re-running a partition replaces exactly its rows and never duplicates them. Files are
written to a temporary name and renamed, so a reader (or a DuckDB view) never sees a
half-written file and a killed run leaves the previous version in place.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

UNPARTITIONED = "all"
_SAFE = re.compile(r"[^A-Za-z0-9._=-]+")


def quote_ident(name: str) -> str:
    """A SQL identifier (table / view / column name) quoted for DuckDB."""
    return '"' + str(name).replace('"', '""') + '"'


def quote_literal(value: str) -> str:
    """A SQL string literal, for the few places DuckDB takes no parameter (DDL)."""
    return "'" + str(value).replace("'", "''") + "'"


def safe_name(value: str, max_len: int = 120) -> str:
    """A file-system and partition-key safe version of ``value`` (stable, readable)."""
    cleaned = _SAFE.sub("_", value).strip("._") or "_"
    return cleaned[:max_len]


@dataclass(frozen=True)
class TableWrite:
    table: str
    part: str
    path: Path
    rows: int


class TableStore:
    """Reads and writes the project's tables under ``data_dir``."""

    def __init__(self, data_dir: str | os.PathLike[str]):
        self.data_dir = Path(data_dir).resolve()

    # -- paths -----------------------------------------------------------------------
    @property
    def tables_dir(self) -> Path:
        return self.data_dir / "tables"

    @property
    def media_dir(self) -> Path:
        return self.data_dir / "media"

    @property
    def catalog_path(self) -> Path:
        return self.data_dir / "catalog.duckdb"

    def table_dir(self, table: str) -> Path:
        return self.tables_dir / safe_name(table)

    def part_path(self, table: str, part: str = UNPARTITIONED) -> Path:
        return self.table_dir(table) / f"{safe_name(part)}.parquet"

    def glob(self, table: str) -> str:
        return str(self.table_dir(table) / "*.parquet")

    # -- writing ---------------------------------------------------------------------
    def write(
        self, table: str, df: pd.DataFrame, part: str = UNPARTITIONED, schema: pa.Schema | None = None
    ) -> TableWrite:
        """Replace one partition file of ``table`` with ``df`` atomically.

        An empty frame still writes a file (with the contract's schema when given), so a
        re-run that now yields nothing removes the rows an earlier run wrote.
        """
        path = self.part_path(table, part)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrow = _to_arrow(df, schema)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        os.close(fd)
        try:
            pq.write_table(arrow, tmp)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return TableWrite(table=table, part=part, path=path, rows=arrow.num_rows)

    def delete_part(self, table: str, part: str) -> bool:
        path = self.part_path(table, part)
        if path.exists():
            path.unlink()
            return True
        return False

    # -- reading ---------------------------------------------------------------------
    def exists(self, table: str) -> bool:
        d = self.table_dir(table)
        return d.is_dir() and any(d.glob("*.parquet"))

    def parts(self, table: str) -> list[str]:
        d = self.table_dir(table)
        return sorted(p.stem for p in d.glob("*.parquet")) if d.is_dir() else []

    def read(
        self,
        table: str,
        parts: list[str] | None = None,
        where: str | None = None,
        columns: list[str] | None = None,
        params: list | None = None,
    ) -> pd.DataFrame:
        """Read a table (optionally some partitions) into pandas; empty frame if absent.

        ``where`` is SQL written by the caller; values go in ``params`` (``?`` placeholders),
        never into the string."""
        if parts is not None:
            files = [str(self.part_path(table, p)) for p in parts if self.part_path(table, p).exists()]
        else:
            files = [self.glob(table)] if self.exists(table) else []
        if not files:
            return pd.DataFrame(columns=columns or [])
        cols = ", ".join(quote_ident(c) for c in columns) if columns else "*"
        sql = f"select {cols} from read_parquet(?, union_by_name=true)"
        if where:
            sql += f" where {where}"
        with duckdb.connect() as con:
            return con.execute(sql, [files, *(params or [])]).df()

    def read_batch(self, table: str, batch: str) -> pd.DataFrame:
        """Rows of one batch: the table's partition file, or, for a table written unpartitioned
        (or per some other key), its rows whose ``batch`` column matches; empty if neither."""
        if self.part_path(table, batch).exists():
            return self.read(table, parts=[batch])
        if not self.exists(table):
            return pd.DataFrame()
        try:
            return self.read(table, where="batch = ?", params=[batch])
        except duckdb.BinderException:  # no batch column: nothing belongs to a batch
            return pd.DataFrame()

    def query(self, sql: str, params: list | None = None) -> pd.DataFrame:
        """Run SQL where every existing table is visible as a view of the same name."""
        with duckdb.connect() as con:
            for table in self.table_names():
                con.execute(
                    f"create view {quote_ident(table)} as select * from read_parquet({quote_literal(self.glob(table))}, "
                    "union_by_name=true)"
                )
            return con.execute(sql, params or []).df()

    def table_names(self) -> list[str]:
        if not self.tables_dir.is_dir():
            return []
        return sorted(d.name for d in self.tables_dir.iterdir() if d.is_dir() and any(d.glob("*.parquet")))


def _to_arrow(df: pd.DataFrame, schema: pa.Schema | None) -> pa.Table:
    if schema is None:
        return pa.Table.from_pandas(df, preserve_index=False)
    missing = [f.name for f in schema if f.name not in df.columns]
    if missing:
        raise ValueError(f"frame lacks contract columns {missing}")
    ordered = df[[f.name for f in schema]]
    return pa.Table.from_pandas(ordered, schema=schema, preserve_index=False)
