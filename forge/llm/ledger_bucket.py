"""The spend ledger of several machines on one bucket (docs/operations.md "Object storage").

Each machine appends to its own SQLite ledger in its work dir (``forge/llm/ledger.py``: SQLite
must never sit on a shared mount). When a step snapshots the ledger (the ``llm_ledger`` table),
the rows of this machine that the bucket lacks are published as one object, one PUT, under a
content key (the hash of their request ids: ``ledger/llm/<k[:2]>/<k>.json``; the same rows always
get the same key, so a retried publish writes no second copy), and the snapshot is read from every
machine's published objects. A request is one row everywhere: rows are de-duplicated by
``request_id`` (unique per HTTP attempt), so a row published twice (two processes of one machine
at once) is counted once.
"""

from __future__ import annotations

import hashlib
import json
import os

import pandas as pd

from forge.llm.ledger import ledger_frame, ledger_rows, read_ledger
from forge.storage.location import Remote
from forge.storage.shared_entries import SharedEntries


def _entries(remote: Remote) -> SharedEntries:
    return SharedEntries(remote, "llm", root="ledger")


def published_rows(remote: Remote) -> list[list]:
    """Every machine's published ledger rows (stored form), duplicates included."""
    entries = _entries(remote)
    found = entries.get_many(entries.keys())
    return [row for key in sorted(found) for row in json.loads(found[key])["rows"]]


def merged_ledger(path: str | os.PathLike[str] | None, remote: Remote | None) -> pd.DataFrame:
    """The ledger the snapshot shows: ``path``'s rows on a local data dir; on object storage this
    machine's unpublished rows published first, then every machine's rows, each request once."""
    if remote is None:
        return read_ledger(path)
    published = published_rows(remote)
    seen = {str(r[0]) for r in published}
    mine = [list(r) for r in (ledger_rows(path) if path is not None else []) if str(r[0]) not in seen]
    if mine:
        key = hashlib.sha256("\n".join(sorted(str(r[0]) for r in mine)).encode()).hexdigest()
        entries = _entries(remote)
        remote.put_once(entries.rel(key), json.dumps({"rows": mine}).encode())
    frame = ledger_frame(published + mine).drop_duplicates("request_id", keep="first")
    return frame.sort_values(["created_at", "request_id"], kind="stable").reset_index(drop=True)
