"""The LLM reply cache: one SQLite file keyed by request content, shared by processes.

Only successful, parsed, schema-valid replies are stored, each in its own committed
transaction, so a killed run loses at most the replies in flight and never leaves a
half-written or failed entry. WAL mode lets several processes (Dagster runs one process
per step) read while one writes; a busy timeout makes concurrent writers wait instead of
failing. ``INSERT OR REPLACE`` makes a race between two writers of the same key harmless
(both wrote the same content).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from forge.provenance.versioning import sha256_bytes, stable_json

CACHE_SCHEMA_VERSION = "1"


def cache_key(payload: dict[str, Any]) -> str:
    return sha256_bytes((CACHE_SCHEMA_VERSION + stable_json(payload)).encode())


class LLMCache:
    def __init__(self, path: str | Path | None, busy_timeout_s: float = 60.0):
        """``path=None`` keeps an in-memory cache (tests, throwaway runs)."""
        self.path = Path(path) if path else None
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._busy = busy_timeout_s
        self._lock = threading.Lock()
        self._con = self._connect()
        self.hits = self.misses = self.writes = 0

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(
            str(self.path) if self.path else ":memory:",
            timeout=self._busy,
            check_same_thread=False,
            isolation_level=None,
        )
        con.execute(f"pragma busy_timeout={int(self._busy * 1000)}")
        if self.path:
            for attempt in range(50):
                try:
                    con.execute("pragma journal_mode=wal")
                    break
                except sqlite3.OperationalError:  # another process is switching modes
                    time.sleep(0.05 * (attempt + 1))
            con.execute("pragma synchronous=normal")  # WAL + normal: durable on process kill
        con.execute(
            "create table if not exists llm_cache (key text primary key, value text not null, "
            "model text, prompt_name text, created_at real)"
        )
        return con

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._con.execute("select value from llm_cache where key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def put(self, key: str, value: dict[str, Any], model: str = "", prompt_name: str = "") -> None:
        text = json.dumps(value, ensure_ascii=False)
        with self._lock:
            self._con.execute(
                "insert or replace into llm_cache (key, value, model, prompt_name, created_at) values (?, ?, ?, ?, ?)",
                (key, text, model, prompt_name, time.time()),
            )
        self.writes += 1

    def __len__(self) -> int:
        with self._lock:
            return int(self._con.execute("select count(*) from llm_cache").fetchone()[0])

    def delete_prompt(self, prompt_name: str) -> int:
        """Forget every reply made for one prompt (to force fresh calls)."""
        with self._lock:
            return self._con.execute("delete from llm_cache where prompt_name = ?", (prompt_name,)).rowcount

    def close(self) -> None:
        with self._lock:
            self._con.close()
