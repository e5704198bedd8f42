"""The LLM reply cache: one SQLite file keyed by request content, shared by processes.

Only successful, parsed, schema-valid replies are stored, each in its own committed
transaction, so a killed run loses at most the replies in flight and never leaves a
half-written or failed entry. WAL mode lets several processes (Dagster runs one process
per step) read while one writes; a busy timeout makes concurrent writers wait instead of
failing. ``INSERT OR REPLACE`` makes a race between two writers of the same key harmless
(both wrote the same content).

On object storage (``SUBTEXT_DATA_URL``) the file is this machine's working copy, in its work dir,
and every reply is also published to the bucket under its key (``forge/storage/shared_entries.py``):
a miss here reads the bucket, so another machine's paid reply is reused, not bought again.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from forge.provenance.versioning import sha256_bytes, stable_json
from forge.storage.location import local_base
from forge.storage.shared_entries import SharedEntries, shared_entries

CACHE_SCHEMA_VERSION = "1"


def cache_key(payload: dict[str, Any]) -> str:
    return sha256_bytes((CACHE_SCHEMA_VERSION + stable_json(payload)).encode())


class LLMCache:
    def __init__(self, path: str | Path | None, busy_timeout_s: float = 60.0, shared: SharedEntries | None = None):
        """``path=None`` keeps an in-memory cache (tests, throwaway runs); ``shared``: the bucket's
        entries, read on a miss and written with every reply."""
        self.path = Path(path) if path else None
        self.shared = shared
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
        if row is None and self.shared is not None:
            row = self._from_shared(key)
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def _from_shared(self, key: str) -> tuple[str] | None:
        """A reply another run published to the bucket, kept in the working copy."""
        assert self.shared is not None
        data = self.shared.get(key)
        if data is None:
            return None
        entry = json.loads(data)
        self._insert(key, entry["value"], entry.get("model", ""), entry.get("prompt_name", ""))
        return (entry["value"],)

    def put(self, key: str, value: dict[str, Any], model: str = "", prompt_name: str = "") -> None:
        text = json.dumps(value, ensure_ascii=False)
        self._insert(key, text, model, prompt_name)
        if self.shared is not None:
            entry = {"value": text, "model": model, "prompt_name": prompt_name}
            self.shared.put(key, json.dumps(entry, ensure_ascii=False).encode())
        self.writes += 1

    def _insert(self, key: str, text: str, model: str, prompt_name: str) -> None:
        with self._lock:
            self._con.execute(
                "insert or replace into llm_cache (key, value, model, prompt_name, created_at) values (?, ?, ?, ?, ?)",
                (key, text, model, prompt_name, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._con.execute("select count(*) from llm_cache").fetchone()[0])

    def delete_prompt(self, prompt_name: str) -> int:
        """Forget every reply made for one prompt (to force fresh calls). On object storage the
        bucket's entries of the replies this working copy holds go too; entries only another
        machine holds stay (docs/operations.md "Object storage")."""
        with self._lock:
            keys = [r[0] for r in self._con.execute("select key from llm_cache where prompt_name = ?", (prompt_name,))]
            count = self._con.execute("delete from llm_cache where prompt_name = ?", (prompt_name,)).rowcount
        if self.shared is not None:
            for key in keys:
                self.shared.delete(key)
        return count

    def close(self) -> None:
        with self._lock:
            self._con.close()


def default_cache_path() -> Path:
    """``<data_dir>/cache/llm_cache.sqlite``; on object storage, in this machine's work dir."""
    return local_base() / "cache" / "llm_cache.sqlite"


def open_cache(path: str | Path | None = None) -> LLMCache:
    """The reply cache at ``path`` (default :func:`default_cache_path`), publishing to the bucket
    when the data location is one (``SUBTEXT_DATA_URL``)."""
    return LLMCache(path or default_cache_path(), shared=shared_entries("llm"))
