"""Media and other files under the data location, by key (a path relative to it: the stored
path tables already hold, ``media/frames/<sha>.jpg``).

Locally a key is a file under the data dir, written to a temporary name and renamed. On object
storage it is an object written once under a content-addressed key with a conditional PUT
(``If-None-Match: *``): a retried task finds its object and writes no second copy, and a PUT is
whole or absent, so no half object is ever seen. A worker that needs a POSIX file (ffmpeg,
OpenCV) fetches the object into its own work directory (``fetch``), never a shared path.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from forge.storage.location import is_remote
from forge.storage.tables import TableStore


def worker_store(location: str) -> TableStore:
    """The store of a Ray task or actor handed ``location`` by its driver (which checked it at the
    run's start): this node's own work dir, and a check that retries throttling and dropped
    connections with the full backoff instead of failing the task."""
    return TableStore(location, check_attempts=None)


def content_key(data: bytes, prefix: str, suffix: str) -> str:
    """``<prefix>/<sha256[:2]>/<sha256>.<suffix>``: the same bytes always get the same key."""
    sha = hashlib.sha256(data).hexdigest()
    return f"{prefix.strip('/')}/{sha[:2]}/{sha}{suffix}"


def put_once(store: TableStore, key: str, data: bytes) -> bool:
    """Write ``data`` under ``key`` unless something is there; ``True`` when this call wrote it."""
    if store.remote is not None:
        return store.remote.put_once(key, data)
    dest = store.data_dir / key
    if dest.exists():
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return True


def put_file_once(store: TableStore, key: str, path: str | os.PathLike[str]) -> bool:
    """``put_once`` of a local file (a frame ffmpeg wrote in the work dir)."""
    return put_once(store, key, Path(path).read_bytes())


def exists(store: TableStore, key: str) -> bool:
    if store.remote is not None:
        return store.remote.exists(key)
    return (store.data_dir / key).is_file()


def fetch(store: TableStore, key: str) -> Path:
    """A local file holding ``key``: the file itself locally; on object storage a copy in this
    machine's work dir (fetched once: content-addressed keys never change)."""
    local = store.data_dir / key
    if store.remote is None or local.is_file():
        return local
    return store.remote.download(key, local)


def publish(store: TableStore, key: str) -> bool:
    """Put the work dir's file ``key`` to the bucket under the same key unless an object with the
    same bytes is there (its ETag, the MD5 of a single-PUT object, is compared): a retried task
    finds its object and writes no second copy; a re-run with other settings replaces it whole in
    one PUT. ``True`` when this call wrote it; locally nothing to do (``False``)."""
    if store.remote is None:
        return False
    data = (store.data_dir / key).read_bytes()
    if store.remote.etag(key) == f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"':
        return False
    store.remote.put(key, data)
    return True


def publish_many(store: TableStore, keys: list[str]) -> int:
    """``publish`` each of ``keys``; objects written."""
    return sum(publish(store, k) for k in keys) if store.remote is not None else 0


def fetch_many(store: TableStore, keys: list[str]) -> list[Path]:
    """``fetch`` each of ``keys`` (this worker's inputs, into its own work dir)."""
    return [fetch(store, k) for k in keys]


def localize(location: str | os.PathLike[str], keys: list[str]) -> Path:
    """A worker's local root for ``keys`` (stored paths): on object storage this node's own work
    dir, with the keys it lacks fetched from the bucket; locally the data dir itself. ``location``
    is what ``forge.storage.location.location_of`` handed the worker. A key with no object stays
    absent, as a missing file on a local disk: the reader's open fails for that item alone."""
    if not is_remote(location):
        return Path(location)
    store = worker_store(str(location))
    for k in keys:
        if isinstance(k, str) and k and not os.path.isabs(k):
            try:
                fetch(store, k)
            except FileNotFoundError:
                pass  # one missing frame is that frame's reject, never the whole shard's failure
    return store.data_dir
