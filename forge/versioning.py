"""Content hashes that become Dagster ``code_version``s and per-row ``prompt_hash``es.

An asset's code version is the hash of what decides its output: a version string for
its logic, the prompt files it renders and the configuration slice it reads. Editing
any of them changes the hash, so the UI marks that asset and its descendants unsynced.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def stable_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def content_hash(*parts: Any, files: list[str | Path] | tuple = (), length: int = 12) -> str:
    """Short hash of JSON-able ``parts`` plus the bytes of ``files`` (order-insensitive by path)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(stable_json(p).encode())
    for f in sorted(Path(x) for x in files):
        h.update(str(f.name).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:length]
