"""Cache entries published to the bucket, so a second machine reuses what the first one paid for.

On object storage each machine keeps its caches (the LLM reply cache, the stage cache) as SQLite
files in its own work dir: SQLite needs a POSIX file and must never sit on a shared mount. Those
files are only this machine's working copy. Every entry is also published to the bucket as one
object under its content key (``cache/<kind>/<key[:2]>/<key>.json``): a lookup that misses the
working copy reads the bucket and keeps what it finds, so a re-run, on this machine or another,
never pays twice for the same request or the same unit of work.

An entry's key is a hash of everything its value depends on, so an object under a key never
needs replacing: one PUT makes it whole or absent (a killed writer leaves a miss, never half an
entry), and two machines racing on one key write the same value.
"""

from __future__ import annotations

from collections.abc import Iterable

from forge.storage.location import Remote, configured_location, is_remote, open_remote


class SharedEntries:
    """The bucket side of one cache kind (``llm``, ``stages/<stage>``); ``root``: another top
    folder for entries that are records, not a cache (the spend ledger's: ``ledger``)."""

    def __init__(self, remote: Remote, kind: str, root: str = "cache"):
        self.remote = remote
        self.prefix = f"{root.strip('/')}/{kind.strip('/')}"

    def rel(self, key: str) -> str:
        return f"{self.prefix}/{key[:2]}/{key}.json"

    def get(self, key: str) -> bytes | None:
        got = self.remote.get(self.rel(key))
        return None if got is None else got[0]

    def get_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        """The published entries among ``keys``, fetched concurrently (absent ones left out)."""
        paths = {self.remote.key(self.rel(k)): k for k in dict.fromkeys(keys)}
        if not paths:
            return {}
        found = self.remote.fs.cat(list(paths), on_error="omit")
        return {paths[p]: data for p, data in found.items() if p in paths}

    def keys(self) -> list[str]:
        """Every published entry's key (one listing)."""
        return sorted(name.rsplit("/", 1)[-1].removesuffix(".json") for name in self.remote.listing(self.prefix))

    def put(self, key: str, data: bytes) -> None:
        self.remote.put(self.rel(key), data)

    def put_many(self, entries: dict[str, bytes]) -> None:
        """Publish several entries, concurrently (each one PUT: whole or absent)."""
        if entries:
            self.remote.fs.pipe({self.remote.key(self.rel(k)): v for k, v in entries.items()})

    def delete(self, key: str) -> None:
        self.remote.delete(self.rel(key))


def shared_entries(kind: str, location: str | None = None) -> SharedEntries | None:
    """The bucket's entries of ``kind`` when the data location is remote; ``None`` locally."""
    location = location or configured_location()
    return SharedEntries(open_remote(location), kind) if is_remote(location) else None
