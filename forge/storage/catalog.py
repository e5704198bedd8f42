"""The DuckDB catalog: ``data/catalog.duckdb`` holds one view per table, nothing else.

Each table's view lists the table's live Parquet files (``TableStore.files``: one per partition,
from the table's manifest), so the catalog is a snapshot: a publish (``refresh_catalog``, which
every materialization ends with) points all views at the new file set at once, and a reader sees
one publish or the next, never a mix and never a file being rewritten (files are never rewritten
in place; ``forge/storage/manifest.py``).

Readers and runs never wait on each other:

* a publish builds the new catalog in a file beside the old one (a copy of it with the changed
  views replaced) and swaps it in with ``os.replace``; a reader holding the old file keeps its
  views, whose files stay readable for the grace period (``SUBTEXT_TABLE_GRACE_S``) after the
  swap, the next open gets the new file, and no one ever holds ``catalog.duckdb`` read-write.
  Writers serialise on a file lock among themselves only; a publish that changes no view does
  not touch the file at all. The same publish deletes the files whose grace period is over;
* view paths are absolute (``<data dir>/tables/<t>/<file>.parquet``), so any DuckDB client, opened
  from any directory, reads the tables. A copied or moved data dir is re-pointed at itself the
  first time ``open_catalog`` (``make query``, the build summary) opens it, or by the next
  publish; until then a bare client on the copy reads the original's files, or, when those are
  gone, fails naming the missing path.

On object storage (``SUBTEXT_DATA_URL=s3://...``) the views name the objects' URLs and the
catalog file is this machine's own (in its work dir): ``open_catalog`` rebuilds it from the
bucket's manifests each time, reading only, so ``make query`` on a laptop reads a team's bucket
without writing to it; only a build's publish sweeps retired objects. Each connection gets the
fsspec filesystem registered (``tables.attach_filesystem``): DuckDB's httpfs is not used.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
import time
from pathlib import Path

import duckdb
from filelock import FileLock, Timeout

from forge.storage import manifest, remote_manifest
from forge.storage.contracts import Contract, all_contracts
from forge.storage.tables import TableStore, attach_filesystem, quote_ident, quote_literal

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
_SIGNATURE = ".catalog.sha256"  # hash of the view statements the current catalog file holds
LOCK_TIMEOUT_S = 120  # a build takes well under a second; only a hung writer holds it longer
_ATTACHED = "catalog"  # what open_catalog names the attached file (a plain connect names it so too)
_TABLE_TAG, _VIEW_TAG = "table ", "view "  # view comments: which statement made the view


def register_view(name: str, sql: str) -> None:
    """Let a stage add a derived view (e.g. a leaderboard) to every catalog refresh."""
    EXTRA_VIEWS[name] = sql


def view_sql(
    store: TableStore, table: str, contract: Contract | None, files: list[Path] | list[str] | None = None
) -> str:
    """The view's query: over ``files`` (default: the table's live files), else the contract's
    typed empty table."""
    files = store.files(table) if files is None else files
    if files and store.remote is not None:  # URLs: the same on every machine
        paths = ", ".join(quote_literal(str(f)) for f in files)
        return f"select * from read_parquet([{paths}], union_by_name=true)"
    if files:  # absolute: a client opened anywhere reads them
        root = _root(store)  # resolved once: a table has a file per partition
        paths = ", ".join(quote_literal(f"{root}/{f.relative_to(store.data_dir).as_posix()}") for f in files)
        return f"select * from read_parquet([{paths}], union_by_name=true)"
    if contract is None:
        raise ValueError(f"table {table} has neither files nor a contract")
    cols = ", ".join(f"cast(null as {_DUCK_TYPES[c.type]}) as {quote_ident(c.name)}" for c in contract.columns)
    return f"select {cols} where false"


def _search_path(data_dir: Path) -> str:
    return "set file_search_path = " + quote_literal(str(data_dir))


def _root(store: TableStore) -> str:
    return store.url if store.remote is not None else store.data_dir.resolve().as_posix()


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
    file, it never locks you out, and an open connection keeps answering from the publish it
    opened (its files stay for ``SUBTEXT_TABLE_GRACE_S``); reopen to see a newer one."""
    store = data_dir if isinstance(data_dir, TableStore) else TableStore(data_dir)
    if store.remote is not None:  # this machine's catalog of the bucket, rebuilt reading only
        refresh_catalog(store, sweep=False)
    con = _attach_read_only(store)
    if _points_elsewhere(con, store):  # a copied or moved data dir: its views re-pointed at itself
        con.close()
        try:
            refresh_catalog(store)
        except OSError as exc:  # a read-only copy: say what to do rather than read the original
            raise duckdb.IOException(
                f"{store.catalog_path} reads the tables of another data dir and cannot be rewritten here "
                f"({exc}); copy the data dir somewhere writable, or run a build step on it"
            ) from exc
        con = _attach_read_only(store)
    con.execute(_search_path(store.data_dir))  # derived views that name relative paths
    return con


def _attach_read_only(store: TableStore) -> duckdb.DuckDBPyConnection:
    """A fresh DuckDB with the current catalog file attached, read through one file handle.

    Not ``duckdb.connect(path)``: that opens the file three times (type probe, headers, blocks),
    so a publish swapping it in between hands it the headers of one file and the blocks of
    another (``Could not read enough bytes``); ``ATTACH ... (TYPE duckdb)`` opens it once. And
    ``connect`` shares one database per path within a process: while any connection is open, a
    new one would still get the file it opened, never a newer publish."""
    if not store.catalog_path.exists():
        raise duckdb.IOException(f"no catalog at {store.catalog_path}: build something first (make demo)")
    con = duckdb.connect()
    try:
        if store.remote is not None:
            attach_filesystem(con, store.remote)
        path = quote_literal(str(store.catalog_path))
        con.execute(f"attach {path} as {quote_ident(_ATTACHED)} (type duckdb, read_only)")
        con.execute(f"use {quote_ident(_ATTACHED)}")
    except BaseException:
        con.close()
        raise
    return con


def refresh_catalog(store: TableStore, sweep: bool = True) -> list[str]:
    """Make the catalog hold one view per table (and every registered derived view); returns
    the view names. Builds a new file and swaps it in atomically; readers are never waited on.
    Then starts the grace period of the files it stopped naming, and deletes those past it
    (``sweep=False``: a reader's rebuild, which changes nothing in the data location)."""
    grace = manifest.grace_s()  # a bad setting fails before anything is built
    started = time.time()
    contracts = all_contracts()
    existing = set(store.table_names())
    names = sorted(set(contracts) | existing)
    statements = {n: view_sql(store, n, contracts.get(n), None if n in existing else []) for n in names}
    signature = hashlib.sha256(repr((sorted(statements.items()), sorted(EXTRA_VIEWS.items()))).encode()).hexdigest()
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
            extra = sorted(EXTRA_VIEWS)
        else:
            extra = _build(store, statements)
            # a derived view that could not be made yet (its table not built) is retried by the next publish
            if len(extra) == len(EXTRA_VIEWS):
                sig_path.write_text(signature)
        # the catalog in place names only files live at ``started``: older retirees' grace starts now
        if sweep:
            _sweep(store, started, grace)
    finally:
        lock.release()
    return names + sorted(extra)


def _build(store: TableStore, statements: dict[str, str]) -> list[str]:
    """Swap in a catalog whose table views are ``statements`` (the current catalog's other views
    kept, registered derived views added); returns the derived views made. Caller holds the lock."""
    for stale in store.data_dir.glob(_TMP_PREFIX + "*"):  # a build killed mid-way
        stale.unlink(missing_ok=True)
    tmp = store.data_dir / f"{_TMP_PREFIX}{os.getpid()}.duckdb"
    try:
        if store.catalog_path.exists():  # start from the current file: only changed views are rebuilt
            shutil.copyfile(store.catalog_path, tmp)
        with _BUILDER_LOCK:
            con = _builder()
            if store.remote is not None:  # binding a view reads its files' footers
                attach_filesystem(con, store.remote)
            try:
                con.execute(f"attach {quote_literal(str(tmp))} as build")
            except duckdb.Error as exc:  # not a DuckDB file (a torn copy, a stray file): build afresh
                log.warning("catalog %s not reused (%s); building it afresh", store.catalog_path, exc)
                tmp.unlink(missing_ok=True)
                con.execute(f"attach {quote_literal(str(tmp))} as build")
            try:
                con.execute("use build")
                con.execute(_search_path(store.data_dir))  # relative globs bind against the data dir
                con.execute("begin")  # one commit: each statement on its own would sync the WAL
                try:
                    _put_table_views(con, statements)
                except BaseException:
                    con.execute("rollback")
                    raise
                con.execute("commit")
                # each derived view on its own: a failed statement aborts a DuckDB transaction, so
                # one view that cannot bind yet would otherwise cost every view after it
                extra = _put_derived_views(con, statements)
                con.execute("checkpoint")
            finally:
                con.execute("use memory")
                con.execute("detach build")
        (store.data_dir / _SIGNATURE).unlink(missing_ok=True)  # until the new file is in place
        # a WAL left by someone who opened the old file read-write belongs to the old file
        Path(str(store.catalog_path) + ".wal").unlink(missing_ok=True)
        os.replace(tmp, store.catalog_path)
    finally:
        tmp.unlink(missing_ok=True)
        Path(str(tmp) + ".wal").unlink(missing_ok=True)
    return extra


def _current_tags(con: duckdb.DuckDBPyConnection) -> dict[str, str | None]:
    """The views of the attached ``build`` file and their comments (the hash of their statement)."""
    rows = con.execute(
        "select view_name, comment from duckdb_views() where database_name = 'build' and not internal"
    ).fetchall()
    return dict(rows)


def _put_table_views(con: duckdb.DuckDBPyConnection, statements: dict[str, str]) -> None:
    """In the attached ``build`` file: (re)create each table view whose statement changed (the
    view's comment holds its statement's hash) and drop views of tables that are gone."""
    current = _current_tags(con)
    for name, tag in current.items():
        if name not in statements and (tag or "").startswith(_TABLE_TAG):
            con.execute(f"drop view {quote_ident(name)}")
    for name, sql in statements.items():
        tag = _TABLE_TAG + hashlib.sha256(sql.encode()).hexdigest()[:32]
        if current.get(name) != tag:
            con.execute(f"create or replace view {quote_ident(name)} as {sql}")
            con.execute(f"comment on view {quote_ident(name)} is {quote_literal(tag)}")


def _put_derived_views(con: duckdb.DuckDBPyConnection, statements: dict[str, str]) -> list[str]:
    """(Re)create the registered derived views whose statement changed, each on its own, and keep
    those another process registered (it imported the stage that owns them); a view over a table
    not built yet is skipped and the others still come. Returns the derived views present."""
    current = _current_tags(con)
    extra: list[str] = []
    for name, sql in EXTRA_VIEWS.items():
        if name in statements:
            continue
        tag = _VIEW_TAG + hashlib.sha256(sql.encode()).hexdigest()[:32]
        if current.get(name) != tag:
            try:
                con.execute(f"create or replace view {quote_ident(name)} as {sql}")
            except duckdb.Error as exc:
                log.debug("view %s skipped: %s", name, exc)
                continue
            con.execute(f"comment on view {quote_ident(name)} is {quote_literal(tag)}")
        extra.append(name)
    return extra


_BUILDER_LOCK = threading.Lock()
_BUILDERS: dict[int, duckdb.DuckDBPyConnection] = {}


def _builder() -> duckdb.DuckDBPyConnection:
    """One in-memory DuckDB per process that attaches each catalog being built (a new DuckDB
    costs ~15 ms; a publish is a few ms). Keyed by pid: a forked child never uses its parent's."""
    pid = os.getpid()
    if pid not in _BUILDERS:
        # no fsync per commit: the file is private until renamed into place, and a catalog is
        # derived data any publish rebuilds (table files are not synced either)
        _BUILDERS[pid] = duckdb.connect(config={"fsync_mode": "NONE"})
    return _BUILDERS[pid]


def _sweep(store: TableStore, unlisted_before: float, grace: float) -> None:
    if store.remote is not None:
        for table in store.remote.subdirs("tables"):
            try:
                remote_manifest.sweep(store.remote, f"tables/{table}", unlisted_before, grace)
            except (OSError, ValueError) as exc:  # the catalog is in place; the objects wait for the next publish
                log.warning("old objects of %s not removed: %s", table, exc)
        return
    if not store.tables_dir.is_dir():
        return
    for table_dir in store.tables_dir.iterdir():
        if table_dir.is_dir():
            try:
                manifest.sweep(table_dir, unlisted_before, grace)
            except (OSError, ValueError) as exc:  # the catalog is in place; the files wait for the next publish
                log.warning("old files of %s not removed: %s", table_dir, exc)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
