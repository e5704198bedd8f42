"""The DuckDB catalog: ``data/catalog.duckdb`` holds one view per table, nothing else.

Views read the Parquet partition files through a glob, so the catalog is current the
moment a partition file is renamed into place; it only has to be rewritten when a new
table (or a derived view) appears.

Readers and runs never wait on each other:

* a publish builds the new catalog in a file beside the old one and swaps it in with
  ``os.replace``; a reader holding the old file keeps its (still valid) views, the next
  open gets the new file, and no one ever holds ``catalog.duckdb`` read-write. Writers
  serialise on a file lock among themselves only; a publish that changes no view does not
  touch the file at all;
* view paths are absolute (``<data dir>/tables/<t>/*.parquet``), so any DuckDB client, opened
  from any directory, reads the tables. A copied or moved data dir is re-pointed at itself the
  first time ``open_catalog`` (``make query``, the build summary) opens it, or by the next
  publish; until then a bare client on the copy reads the original's files, or, when those are
  gone, fails naming the missing path.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import duckdb
from filelock import FileLock, Timeout

from forge.storage.contracts import Contract, all_contracts
from forge.storage.tables import TableStore, quote_ident, quote_literal

log = logging.getLogger(__name__)

_DUCK_TYPES = {
    "string": "VARCHAR",
    "int64": "BIGINT",
    "int32": "INTEGER",
    "float64": "DOUBLE",
    "bool": "BOOLEAN",
    "timestamp": "TIMESTAMPTZ",
    "list<string>": "VARCHAR[]",
    "list<int64>": "BIGINT[]",
    "list<float64>": "DOUBLE[]",
    "json": "VARCHAR",
}

# Views over other views: cross-table conveniences that read better than raw joins.
EXTRA_VIEWS: dict[str, str] = {}

_TMP_PREFIX = ".catalog.building."
_SIGNATURE = ".catalog.sha256"
LOCK_TIMEOUT_S = 120  # a build takes well under a second; only a hung writer holds it longer  # hash of the view statements the current catalog file holds


def register_view(name: str, sql: str) -> None:
    """Let a stage add a derived view (e.g. a leaderboard) to every catalog refresh."""
    EXTRA_VIEWS[name] = sql


def view_sql(store: TableStore, table: str, contract: Contract | None) -> str:
    if store.exists(table):
        rel = Path(store.glob(table)).relative_to(store.data_dir).as_posix()
        path = f"{_root(store)}/{rel}"  # absolute: a client opened anywhere reads it
        return f"select * from read_parquet({quote_literal(path)}, union_by_name=true)"
    if contract is None:
        raise ValueError(f"table {table} has neither files nor a contract")
    cols = ", ".join(f"cast(null as {_DUCK_TYPES[c.type]}) as {quote_ident(c.name)}" for c in contract.columns)
    return f"select {cols} where false"


def _search_path(data_dir: Path) -> str:
    return "set file_search_path = " + quote_literal(str(data_dir))


def _root(store: TableStore) -> str:
    return store.data_dir.resolve().as_posix()


def _points_elsewhere(con: duckdb.DuckDBPyConnection, store: TableStore) -> bool:
    """Whether the catalog's table views read another data dir (this one was copied or moved)
    or are relative (a catalog written before view paths were absolute)."""
    row = con.execute(
        "select sql from duckdb_views() where not internal and sql like '%read_parquet(%' limit 1"
    ).fetchone()
    return row is not None and f"'{_root(store)}/tables/" not in row[0].replace("''", "'")


def open_catalog(data_dir: str | os.PathLike[str] | TableStore) -> duckdb.DuckDBPyConnection:
    """The front door: a read-only connection to the catalog with its relative view paths
    resolved against ``data_dir``. Open one per query (or per session): a publish swaps the
    file, it never locks you out, and an open connection keeps working on the file it has."""
    store = data_dir if isinstance(data_dir, TableStore) else TableStore(data_dir)
    con = duckdb.connect(str(store.catalog_path), read_only=True)
    if _points_elsewhere(con, store):  # a copied or moved data dir: its views re-pointed at itself
        con.close()
        try:
            refresh_catalog(store)
        except OSError as exc:  # a read-only copy: say what to do rather than read the original
            raise duckdb.IOException(
                f"{store.catalog_path} reads the tables of another data dir and cannot be rewritten here "
                f"({exc}); copy the data dir somewhere writable, or run a build step on it"
            ) from exc
        con = duckdb.connect(str(store.catalog_path), read_only=True)
    con.execute(_search_path(store.data_dir))  # derived views that name relative paths
    return con


def refresh_catalog(store: TableStore) -> list[str]:
    """Make the catalog hold one view per table (and every registered derived view); returns
    the view names. Builds a new file and swaps it in atomically; readers are never waited on."""
    contracts = all_contracts()
    names = sorted(set(contracts) | set(store.table_names()))
    statements = [(n, view_sql(store, n, contracts.get(n))) for n in names]
    signature = hashlib.sha256(repr((statements, sorted(EXTRA_VIEWS.items()))).encode()).hexdigest()
    store.data_dir.mkdir(parents=True, exist_ok=True)
    sig_path = store.data_dir / _SIGNATURE
    lock = FileLock(str(store.data_dir / ".catalog.lock"))  # writers only: one build at a time
    try:
        lock.acquire(timeout=LOCK_TIMEOUT_S)
    except Timeout:  # another writer hung mid-build: the next publish adds the new views
        log.warning("catalog %s not rebuilt: another publish held its lock for %ss", store.catalog_path, LOCK_TIMEOUT_S)
        return []
    try:
        if store.catalog_path.exists() and _read(sig_path) == signature:
            return names + sorted(EXTRA_VIEWS)
        for stale in store.data_dir.glob(_TMP_PREFIX + "*"):  # a build killed mid-way
            stale.unlink(missing_ok=True)
        tmp = store.data_dir / f"{_TMP_PREFIX}{os.getpid()}.duckdb"
        extra: list[str] = []
        try:
            with duckdb.connect(str(tmp)) as con:
                con.execute(_search_path(store.data_dir))  # relative globs bind against the data dir
                for name, sql in statements:
                    con.execute(f"create view {quote_ident(name)} as {sql}")
                for name, sql in EXTRA_VIEWS.items():
                    try:
                        con.execute(f"create view {quote_ident(name)} as {sql}")
                        extra.append(name)
                    except duckdb.Error as exc:  # a derived view over a table not built yet
                        log.debug("view %s skipped: %s", name, exc)
                # derived views another process registered (it imported the stage that owns them)
                # survive a rebuild by a process that did not
                for name, create_sql in _derived_views(store, set(names) | set(EXTRA_VIEWS)).items():
                    try:
                        con.execute(create_sql)
                    except duckdb.Error as exc:
                        log.debug("view %s not carried over: %s", name, exc)
                con.execute("checkpoint")
            # a WAL left by someone who opened the old file read-write belongs to the old file
            Path(str(store.catalog_path) + ".wal").unlink(missing_ok=True)
            os.replace(tmp, store.catalog_path)
            # a derived view that could not be made yet (its table not built) is retried by the next publish
            if len(extra) == len(EXTRA_VIEWS):
                sig_path.write_text(signature)
            else:
                sig_path.unlink(missing_ok=True)
        finally:
            tmp.unlink(missing_ok=True)
            Path(str(tmp) + ".wal").unlink(missing_ok=True)
    finally:
        lock.release()
    return names + sorted(extra)


def _derived_views(store: TableStore, known: set[str]) -> dict[str, str]:
    """``name → CREATE VIEW ...`` of views in the current catalog that are neither a table's
    view nor registered in this process."""
    if not store.catalog_path.exists():
        return {}
    try:
        with duckdb.connect(str(store.catalog_path), read_only=True) as old:
            rows = old.execute("select view_name, sql from duckdb_views() where not internal").fetchall()
    except duckdb.Error:
        return {}
    return {name: sql for name, sql in rows if name not in known and sql}


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
