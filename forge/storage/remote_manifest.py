"""Table manifests on object storage: the same ``_manifest.json`` and the same rules as
``forge/storage/manifest.py``, with the file lock replaced by a conditional PUT.

A manifest is one object, replaced by one PUT. A reader GETs it whole (the old version or the
new, never a mix) and then reads the Parquet objects it names, which are never rewritten: a
replaced manifest never makes a reader fail. A writer reads the manifest with its ETag, changes
it and PUTs it back only if the ETag is unchanged (``If-Match``; ``If-None-Match: *`` for the
first write); when another writer got there first it reads again and retries. That is the
single-writer rule without a lock to leave behind: no update is lost, and a writer killed
mid-way leaves the previous manifest. A retried PUT whose first try landed (the answer was
lost) finds its own change in place and stops.
"""

from __future__ import annotations

import random
import time

from forge.storage import manifest
from forge.storage.location import Remote
from forge.storage.manifest import MANIFEST, Manifest

MAX_CONFLICTS = 200  # writers racing on one table's manifest; each round is two requests


class ManifestConflict(RuntimeError):
    """Too many writers won the race for one manifest in a row."""


def load(remote: Remote, table_rel: str) -> Manifest:
    got = remote.get(f"{table_rel}/{MANIFEST}")
    return Manifest() if got is None else manifest.parse(got[0], remote.url_of(f"{table_rel}/{MANIFEST}"))


def _load_tagged(remote: Remote, table_rel: str) -> tuple[Manifest, str | None]:
    got = remote.get(f"{table_rel}/{MANIFEST}")
    if got is None:
        return Manifest(), None
    return manifest.parse(got[0], remote.url_of(f"{table_rel}/{MANIFEST}")), got[1]


def publish(remote: Remote, table_rel: str, part: str, name: str | None) -> str | None:
    """Make ``name`` the partition's file (``None``: drop it); returns the file it retired."""
    retired: str | None = None
    for attempt in range(MAX_CONFLICTS):
        m, etag = _load_tagged(remote, table_rel)
        if attempt and name is not None and m.parts.get(part) == name:
            return retired  # an earlier try landed; its answer was lost
        old = manifest.apply_publish(m, part, name, time.time())
        if attempt == 0:
            retired = old
        if old == name:
            return old
        if remote.put_if(f"{table_rel}/{MANIFEST}", manifest.dumps(m).encode(), etag):
            return old
        time.sleep(random.uniform(0, min(0.5, 0.01 * 2**attempt)))  # another writer won: read again
    raise ManifestConflict(f"{remote.url_of(table_rel)}: manifest still contended after {MAX_CONFLICTS} tries")


def sweep(remote: Remote, table_rel: str, unlisted_before: float, grace: float) -> int:
    """``manifest.sweep`` on object storage: stamp, then delete the files past their grace
    period and the objects a killed write left (older than ``grace``, never listed)."""
    now = time.time()
    for _ in range(MAX_CONFLICTS):
        m, etag = _load_tagged(remote, table_rel)
        stamp, due = manifest.due_files(m, unlisted_before, now, grace)
        known = set(m.parts.values()) | set(m.retired)
        objects = remote.listing(table_rel)
        strays = [n for n, t in objects.items() if n.endswith(".parquet") and n not in known and t <= now - grace]
        if not (stamp or due or strays):
            return 0
        m.unlisted.update(dict.fromkeys(stamp, now))
        for n in due:
            m.retired.pop(n, None)
            m.unlisted.pop(n, None)
        if stamp or due:  # the manifest stops naming them first; then they go
            if not remote.put_if(f"{table_rel}/{MANIFEST}", manifest.dumps(m).encode(), etag):
                continue
        for n in [*due, *strays]:
            remote.delete(f"{table_rel}/{n}")
        return len(due) + len(strays)
    return 0
