"""The DuckDB catalog: ``data/catalog.duckdb`` holds one view per table, nothing else.

Views read the Parquet partition files through a glob, so the catalog is current the
moment a partition file is renamed into place; it only has to be rewritten when a new
table appears. Writing it is the one place that needs DuckDB's single writer, so it is
done under a file lock by whichever process finishes a materialization, and a user who
holds the catalog open read-write only delays the refresh (it is retried next time),
never fails a run.
"""

from __future__ import annotations

import logging
import time

import duckdb
from filelock import FileLock, Timeout

from forge.contracts import Contract, all_contracts
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


def register_view(name: str, sql: str) -> None:
    """Let a stage add a derived view (e.g. a leaderboard) to every catalog refresh."""
    EXTRA_VIEWS[name] = sql


def view_sql(store: TableStore, table: str, contract: Contract | None) -> str:
    if store.exists(table):
        return f"select * from read_parquet({quote_literal(store.glob(table))}, union_by_name=true)"
    if contract is None:
        raise ValueError(f"table {table} has neither files nor a contract")
    cols = ", ".join(f"cast(null as {_DUCK_TYPES[c.type]}) as {quote_ident(c.name)}" for c in contract.columns)
    return f"select {cols} where false"


def refresh_catalog(store: TableStore, retries: int = 5) -> list[str]:
    """(Re)create every view; returns the view names. Never raises on a held lock."""
    contracts = all_contracts()
    names = sorted(set(contracts) | set(store.table_names()))
    store.data_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(store.data_dir / ".catalog.lock"))
    for attempt in range(retries):
        try:
            with lock.acquire(timeout=30), duckdb.connect(str(store.catalog_path)) as con:
                for name in names:
                    con.execute(f"create or replace view {quote_ident(name)} as {view_sql(store, name, contracts.get(name))}")
                for name, sql in EXTRA_VIEWS.items():
                    try:
                        con.execute(f"create or replace view {quote_ident(name)} as {sql}")
                    except duckdb.Error as exc:  # a derived view over a table not built yet
                        log.debug("view %s skipped: %s", name, exc)
                return names + sorted(EXTRA_VIEWS)
        except (duckdb.IOException, Timeout) as exc:
            log.warning("catalog busy (attempt %d/%d): %s", attempt + 1, retries, exc)
            time.sleep(0.5 * (attempt + 1))
    log.warning("catalog %s not refreshed: still locked; views over existing tables stay current", store.catalog_path)
    return []
