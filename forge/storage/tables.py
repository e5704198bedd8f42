"""Parquet tables written atomically per partition, the storage every stage shares.

Layout: ``<data_dir>/tables/<table>/<part>.<stamp>.parquet`` plus ``_manifest.json``, which names
the one live file of each partition (or of each ``stage__partition`` for shared tables such as
``rejects`` and ``llm_calls``), so re-running a partition replaces exactly its rows and never
duplicates them. A write never touches a path a reader may hold: it writes a new file (to a
temporary name, renamed) and swaps the manifest, so a reader sees the old or the new partition,
never a half-written one, and a killed run leaves the previous version in place. The superseded
file stays readable for a grace period (``forge/storage/manifest.py``).

With ``SUBTEXT_DATA_URL=s3://bucket/prefix`` the same layout lives under the URL
(``forge/storage/location.py``): a partition's file is one PUT of a new object (whole or absent)
and the manifest is swapped by a conditional PUT (``forge/storage/remote_manifest.py``); DuckDB
reads the objects through the fsspec filesystem registered on its connection (no extension to
download). ``data_dir`` is then this machine's private work directory, never a shared path.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from forge.storage import manifest, remote_manifest
from forge.storage.location import Remote, is_remote, local_path, open_remote, work_dir

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
    path: Path | str  # a URL on object storage
    rows: int


class TableStore:
    """Reads and writes the project's tables under ``data_dir`` (a local directory, or an
    object-storage URL such as ``s3://bucket/prefix``)."""

    def __init__(self, data_dir: str | os.PathLike[str], check_attempts: int | None = 2):
        self.remote: Remote | None = None
        if is_remote(data_dir):
            # checked: a bad bucket stops here, nothing written (``check_attempts``: open_remote's)
            self.remote = open_remote(str(data_dir), check_attempts=check_attempts)
            self.url = self.remote.url
            self.data_dir = work_dir(self.url)  # this machine's scratch (catalog file, tools' files)
        else:
            self.data_dir = local_path(data_dir).resolve()
            self.url = str(self.data_dir)

    @property
    def location(self) -> str:
        """What the data is stored under: the URL on object storage, else the data dir."""
        return self.url

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

    def files(self, table: str, parts: list[str] | None = None) -> list[Path] | list[str]:
        """The live files of ``table`` (of ``parts`` only, when given), one per partition, from one
        read of its manifest: a consistent set, each file readable for the grace period. On
        object storage, their URLs."""
        live = self._manifest(table).parts
        keys = sorted(live) if parts is None else [safe_name(p) for p in parts]
        if self.remote is not None:
            return [self.remote.url_of(f"{_table_rel(table)}/{live[k]}") for k in keys if k in live]
        return [self.table_dir(table) / live[k] for k in keys if k in live]

    def _manifest(self, table: str) -> manifest.Manifest:
        if self.remote is not None:
            return remote_manifest.load(self.remote, _table_rel(table))
        return manifest.load(self.table_dir(table))

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection that can read this store's files: on disk, a new connection to this
        process's one in-memory database (opening a database costs ~20-40 ms, a connection to it
        nothing; a build reads tables hundreds of times); on object storage, a database of its own
        with the fsspec filesystem attached and extension downloads off (nothing downloads at run
        time). Whatever a caller creates on it must be TEMP: the database is shared."""
        if self.remote is None:
            return _scratch_cursor()
        con = duckdb.connect()
        attach_filesystem(con, self.remote)
        return con

    # -- writing ---------------------------------------------------------------------
    def write(
        self, table: str, df: pd.DataFrame, part: str = UNPARTITIONED, schema: pa.Schema | None = None
    ) -> TableWrite:
        """Replace one partition of ``table`` with ``df`` atomically: a new file, then a manifest swap.

        An empty frame still writes a file (with the contract's schema when given), so a
        re-run that now yields nothing removes the rows an earlier run wrote.
        """
        key = safe_name(part)
        arrow = _to_arrow(df, schema)
        if self.remote is not None:
            return self._write_remote(table, part, key, arrow)
        path = self.table_dir(table) / manifest.new_file_name(key)
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

    def _write_remote(self, table: str, part: str, key: str, arrow: pa.Table) -> TableWrite:
        """One PUT of a new object (whole or absent), then the manifest's conditional swap."""
        assert self.remote is not None
        rel = f"{_table_rel(table)}/{manifest.new_file_name(key)}"
        buf = io.BytesIO()
        pq.write_table(arrow, buf)
        self.remote.put(rel, buf.getvalue())
        try:
            remote_manifest.publish(self.remote, _table_rel(table), key, rel.rsplit("/", 1)[1])
        except BaseException:  # not published: nobody can have been given the object
            self.remote.delete(rel)
            raise
        return TableWrite(table=table, part=part, path=self.remote.url_of(rel), rows=arrow.num_rows)

    def delete_part(self, table: str, part: str) -> bool:
        """Drop a partition (its file is retired, not deleted: a reader may hold it)."""
        if self.remote is not None:
            return remote_manifest.publish(self.remote, _table_rel(table), safe_name(part), None) is not None
        if not self.table_dir(table).is_dir():
            return False
        return manifest.publish(self.table_dir(table), safe_name(part), None) is not None

    # -- reading ---------------------------------------------------------------------
    def exists(self, table: str) -> bool:
        return bool(self._manifest(table).parts)

    def parts(self, table: str) -> list[str]:
        return sorted(self._manifest(table).parts)

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
        with self.connect() as con:
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
        with self.connect() as con:
            for table in self.table_names():
                files = ", ".join(quote_literal(str(f)) for f in self.files(table))
                con.execute(
                    f"create temp view {quote_ident(table)} as "
                    f"select * from read_parquet([{files}], union_by_name=true)"
                )
            return con.execute(sql, params or []).df()

    def table_names(self) -> list[str]:
        if self.remote is not None:
            return [t for t in self.remote.subdirs("tables") if self._manifest(t).parts]
        if not self.tables_dir.is_dir():
            return []
        return sorted(d.name for d in self.tables_dir.iterdir() if d.is_dir() and manifest.load(d).parts)


_SCRATCH: tuple[int, duckdb.DuckDBPyConnection] | None = None
_SCRATCH_LOCK = threading.Lock()


def _scratch_cursor() -> duckdb.DuckDBPyConnection:
    """A new connection to this process's in-memory DuckDB (made anew in a forked child: a
    database's threads do not survive a fork)."""
    global _SCRATCH
    with _SCRATCH_LOCK:
        if _SCRATCH is None or _SCRATCH[0] != os.getpid():
            _SCRATCH = (os.getpid(), duckdb.connect())
        return _SCRATCH[1].cursor()


def _table_rel(table: str) -> str:
    return f"tables/{safe_name(table)}"


def attach_filesystem(con: duckdb.DuckDBPyConnection, remote: Remote) -> None:
    """Let ``con`` read ``remote``'s URLs through its fsspec filesystem. DuckDB's own S3 reader
    (the httpfs extension) is not bundled and must not be downloaded, so autoloading is off."""
    con.execute("set autoinstall_known_extensions = false")
    con.execute("set autoload_known_extensions = false")
    for name in con.list_filesystems():  # another store's (or an older) client: this one replaces it
        if name in ("s3", "s3a") or "S3FileSystem" in name:
            con.unregister_filesystem(name)
    con.register_filesystem(remote.fs)


def _to_arrow(df: pd.DataFrame, schema: pa.Schema | None) -> pa.Table:
    if schema is None:
        return pa.Table.from_pandas(df, preserve_index=False)
    missing = [f.name for f in schema if f.name not in df.columns]
    if missing:
        raise ValueError(f"frame lacks contract columns {missing}")
    ordered = df[[f.name for f in schema]]
    return pa.Table.from_pandas(ordered, schema=schema, preserve_index=False)
