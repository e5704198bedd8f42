"""The spend ledger: one append-only row per request sent to an endpoint, written when it ends.

``llm_calls`` is a per-stage view that a re-run replaces; the ledger is the record of what
was paid. Every HTTP attempt (first try, retry, repair, hedge, batch line) gets exactly one
row keyed by its ``request_id`` (also sent to the endpoint as ``X-Client-Request-Id``),
inserted and committed synchronously the moment its reply (or error, timeout, cancellation)
arrives, before the engine uses the reply. SQLite in WAL mode with ``synchronous=normal``
keeps a committed row through a ``kill -9`` of the process right after. A request in flight
when the process dies has no row: it got no reply, so nothing was delivered.

Cache hits are separate rows with ``kind='cache_hit'`` and cost 0; stub calls cost 0.
Triggers refuse ``UPDATE`` and ``DELETE``: the table only grows.

Readers: ``read_ledger(path)`` (a pandas frame with fixed dtypes, which DuckDB queries
directly), ``spend_by(path, ...)``, ``ledger_path(data_dir)``. Assets publish a snapshot as
the ``llm_ledger`` table (``assets.llm_support.record_llm_calls``), so the catalog has a view.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from forge.storage.location import local_base

LEDGER_TABLE = "llm_ledger"
COLUMNS: dict[str, str] = {
    "request_id": "string",  # primary key; sent as X-Client-Request-Id
    "session_id": "string",  # one engine (asset step) instance
    "pid": "int64",
    "stage": "string",
    "partition": "string",
    "item_id": "string",
    "endpoint": "string",  # provider name or base URL ('stub' for the offline stub)
    "backend": "string",  # openai | stub
    "model": "string",
    "prompt_name": "string",
    "request_key": "string",  # the cache key (joins llm_calls.request_key)
    "kind": "string",  # call | hedge | batch | cache_hit
    "status": "string",  # ok | http_<code> | timeout | connection | cancelled | error
    "tokens_in": "int64",
    "tokens_out": "int64",
    "cost_usd": "float64",
    "latency_s": "float64",
    "response_id": "string",  # the endpoint's id for the reply, when it sent one
    "error": "string",
    "created_at": "datetime64[ns, UTC]",
}
KINDS = ("call", "hedge", "batch", "cache_hit")

_DDL = f"""
create table if not exists {LEDGER_TABLE} (
  request_id text primary key, session_id text, pid integer, stage text, partition text, item_id text,
  endpoint text, backend text, model text, prompt_name text, request_key text, kind text not null,
  status text not null, tokens_in integer not null default 0, tokens_out integer not null default 0,
  cost_usd real not null default 0, latency_s real not null default 0, response_id text, error text,
  created_at text not null
);
create index if not exists {LEDGER_TABLE}_stage on {LEDGER_TABLE} (stage, partition);
create trigger if not exists {LEDGER_TABLE}_no_update before update on {LEDGER_TABLE}
  begin select raise(abort, 'llm_ledger is append-only'); end;
create trigger if not exists {LEDGER_TABLE}_no_delete before delete on {LEDGER_TABLE}
  begin select raise(abort, 'llm_ledger is append-only'); end;
"""


def ledger_path(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Default location: ``<data_dir>/cache/llm_ledger.sqlite`` (the configured data dir when not given;
    on object storage this machine's work dir), beside the default reply cache; clearing the cache
    file leaves it alone."""
    base = Path(data_dir) if data_dir is not None else local_base()
    return base / "cache" / "llm_ledger.sqlite"


def ledger_beside(cache_path: str | os.PathLike[str] | None) -> Path | None:
    """The ledger that goes with a reply cache file (one rule for every engine)."""
    return Path(cache_path).parent / "llm_ledger.sqlite" if cache_path else None


class SpendLedger:
    """Append-only writer (thread-safe); ``path=None`` keeps it in memory (throwaway engines, tests)."""

    def __init__(self, path: str | os.PathLike[str] | None, busy_timeout_s: float = 60.0):
        self.path = Path(path) if path else None
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._con = sqlite3.connect(
            str(self.path) if self.path else ":memory:",
            timeout=busy_timeout_s,
            check_same_thread=False,
            isolation_level=None,
        )
        self._con.execute(f"pragma busy_timeout={int(busy_timeout_s * 1000)}")
        if self.path:
            for attempt in range(50):
                try:
                    self._con.execute("pragma journal_mode=wal")
                    break
                except sqlite3.OperationalError:  # another process is switching modes
                    time.sleep(0.05 * (attempt + 1))
            self._con.execute("pragma synchronous=normal")  # WAL + normal: a committed row survives kill -9
        self._con.executescript(_DDL)
        self.rows = 0

    def append(self, row: dict[str, Any]) -> None:
        """Insert one row and commit before returning (autocommit connection)."""
        values = {c: row.get(c) for c in COLUMNS}
        values["created_at"] = (
            (values["created_at"] or datetime.now(UTC)).isoformat()
            if not isinstance(values["created_at"], str)
            else values["created_at"]
        )
        for c in ("tokens_in", "tokens_out"):
            values[c] = int(values[c] or 0)
        for c in ("cost_usd", "latency_s"):
            values[c] = float(values[c] or 0.0)
        cols = ", ".join(COLUMNS)
        marks = ", ".join("?" for _ in COLUMNS)
        with self._lock:
            self._con.execute(f"insert into {LEDGER_TABLE} ({cols}) values ({marks})", list(values.values()))
            self.rows += 1

    def frame(self, where: str = "", params: Iterable[Any] = ()) -> pd.DataFrame:
        with self._lock:
            cur = self._con.execute(f"select {', '.join(COLUMNS)} from {LEDGER_TABLE} {where}", list(params))
            rows = cur.fetchall()
        return _typed(pd.DataFrame(rows, columns=list(COLUMNS)))

    def recent_latencies(self, endpoint: str, model: str | None = None, limit: int = 200) -> list[float]:
        """Latencies of the last successful calls to ``endpoint`` (seed for the adaptive deadline)."""
        sql = (
            f"select latency_s from {LEDGER_TABLE} where endpoint = ? and status = 'ok' and kind in ('call', 'hedge')"
            + (" and model = ?" if model else "")
            + " order by created_at desc limit ?"
        )
        args: list[Any] = [endpoint] + ([model] if model else []) + [limit]
        with self._lock:
            return [float(r[0]) for r in self._con.execute(sql, args).fetchall()]

    def close(self) -> None:
        with self._lock:
            self._con.close()


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    for c, t in COLUMNS.items():
        if t == "int64":
            df[c] = pd.to_numeric(df[c], errors="coerce").fillna(0).astype("int64")
        elif t == "float64":
            df[c] = pd.to_numeric(df[c], errors="coerce").fillna(0.0).astype("float64")
        elif t.startswith("datetime"):
            df[c] = pd.to_datetime(df[c], utc=True, format="ISO8601")
        else:
            df[c] = df[c].astype("object")
    return df


def read_ledger(path: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """The whole ledger as a frame (read-only open; an absent ledger is an empty frame)."""
    return ledger_frame(ledger_rows(path))


def ledger_rows(path: str | os.PathLike[str] | None = None) -> list[tuple[Any, ...]]:
    """The ledger's rows as stored (``COLUMNS`` order; read-only open; none when absent)."""
    p = Path(path) if path is not None else ledger_path()
    if not p.exists():
        return []
    con = sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=60.0)
    try:
        return con.execute(f"select {', '.join(COLUMNS)} from {LEDGER_TABLE}").fetchall()
    finally:
        con.close()


def ledger_frame(rows: Iterable[Iterable[Any]]) -> pd.DataFrame:
    """Stored rows (``ledger_rows``) as the typed frame ``read_ledger`` gives."""
    return _typed(pd.DataFrame([list(r) for r in rows], columns=list(COLUMNS)))


def spend_by(path: str | os.PathLike[str] | None = None, by: tuple[str, ...] = ("stage", "model")) -> pd.DataFrame:
    """Requests sent, cache hits and $ per group (DuckDB over the ledger frame)."""
    import duckdb

    ledger = read_ledger(path)
    keys = ", ".join(by)
    return duckdb.query_df(
        ledger,
        "ledger",
        f"""
        select {keys}, count(*) filter (where kind <> 'cache_hit') as requests,
               count(*) filter (where kind = 'cache_hit') as cache_hits,
               sum(tokens_in) as tokens_in, sum(tokens_out) as tokens_out, sum(cost_usd) as cost_usd
        from ledger group by all order by cost_usd desc""",
    ).df()
