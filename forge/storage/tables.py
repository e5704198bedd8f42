"""Parquet tables written atomically per partition, the storage every stage shares.

Layout: ``<data_dir>/tables/<table>/<part>.<stamp>.parquet`` plus ``_manifest.json``, which names
the one live file of each partition (or of each ``stage__partition`` for shared tables such as
``rejects`` and ``llm_calls``), so re-running a partition replaces exactly its rows and never
duplicates them. A write never touches a path a reader may hold: it writes a new file (to a
temporary name, renamed) and swaps the manifest, so a reader sees the old or the new partition,
never a half-written one, and a killed run leaves the previous version in place. The superseded
file stays readable for a grace period (``forge/storage/manifest.py``).
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

from forge.storage import manifest

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
        """The partition's live file; for a partition that does not exist, a path that does not."""
        name = manifest.load(self.table_dir(table)).parts.get(safe_name(part))
        return self.table_dir(table) / (name or f"absent/{safe_name(part)}.parquet")

    def files(self, table: str, parts: list[str] | None = None) -> list[Path]:
        """The live files of ``table`` (of ``parts`` only, when given), one per partition, from one
        read of its manifest: a consistent set, each file readable for the grace period."""
        live = manifest.load(self.table_dir(table)).parts
        keys = sorted(live) if parts is None else [safe_name(p) for p in parts]
        return [self.table_dir(table) / live[k] for k in keys if k in live]

    # -- writing ---------------------------------------------------------------------
    def write(
        self, table: str, df: pd.DataFrame, part: str = UNPARTITIONED, schema: pa.Schema | None = None
    ) -> TableWrite:
        """Replace one partition of ``table`` with ``df`` atomically: a new file, then a manifest swap.

        An empty frame still writes a file (with the contract's schema when given), so a
        re-run that now yields nothing removes the rows an earlier run wrote.
        """
        key = safe_name(part)
        path = self.table_dir(table) / manifest.new_file_name(key)
        arrow = _to_arrow(df, schema)
        manifest.ensure(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
        os.close(fd)
        try:
            pq.write_table(arrow, tmp)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        try:
            manifest.publish(path.parent, key, path.name)
        except BaseException:  # not published: nobody can have been given the file
            path.unlink(missing_ok=True)
            raise
        return TableWrite(table=table, part=part, path=path, rows=arrow.num_rows)

    def delete_part(self, table: str, part: str) -> bool:
        """Drop a partition (its file is retired, not deleted: a reader may hold it)."""
        if not self.table_dir(table).is_dir():
            return False
        return manifest.publish(self.table_dir(table), safe_name(part), None) is not None

    # -- reading ---------------------------------------------------------------------
    def exists(self, table: str) -> bool:
        return bool(manifest.load(self.table_dir(table)).parts)

    def parts(self, table: str) -> list[str]:
        return sorted(manifest.load(self.table_dir(table)).parts)

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
        files = [str(f) for f in self.files(table, parts)]
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
        if safe_name(batch) in self.parts(table):
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
                files = ", ".join(quote_literal(str(f)) for f in self.files(table))
                con.execute(
                    f"create view {quote_ident(table)} as select * from read_parquet([{files}], union_by_name=true)"
                )
            return con.execute(sql, params or []).df()

    def table_names(self) -> list[str]:
        if not self.tables_dir.is_dir():
            return []
        return sorted(d.name for d in self.tables_dir.iterdir() if d.is_dir() and manifest.load(d).parts)


def _to_arrow(df: pd.DataFrame, schema: pa.Schema | None) -> pa.Table:
    if schema is None:
        return pa.Table.from_pandas(df, preserve_index=False)
    missing = [f.name for f in schema if f.name not in df.columns]
    if missing:
        raise ValueError(f"frame lacks contract columns {missing}")
    ordered = df[[f.name for f in schema]]
    return pa.Table.from_pandas(ordered, schema=schema, preserve_index=False)
