"""Folders of files under the data location (an export version, a batch's media): published to
the bucket from this machine's work dir, and fetched into it, on object storage; untouched on a
local data dir (the folder already is where it belongs).

A tool that writes a folder (an export, ffmpeg's clips) writes it in the work dir as it always
did; ``publish_tree`` then puts each file under the same key relative to the data location, one
PUT per object (whole or absent), the ``marker`` file last, so a reader that sees the marker
sees every file. ``fetch_tree`` brings a published folder into the work dir (each file renamed
into place, never half). Credentials never enter a key or a message here.
"""

from __future__ import annotations

import os

from forge.storage.tables import TableStore

PRESIGN_ENV = "SUBTEXT_PRESIGN_S"
DEFAULT_PRESIGN_S = 7 * 24 * 3600  # S3's longest pre-signed lifetime (SigV4)


def publish_tree(store: TableStore, rel: str, marker: str | None = None, once: bool = False) -> int:
    """Put every file under ``<data_dir>/<rel>`` to the bucket (``marker``, relative to ``rel``,
    last); ``once``: a file whose key exists is left as it is (an immutable version or a
    content-addressed object: a retry writes no second copy). Objects written; 0 locally."""
    if store.remote is None:
        return 0
    root = store.data_dir / rel
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))
    last = [p for p in files if marker is not None and p == root / marker]
    wrote = 0
    for path in [p for p in files if p not in last] + last:
        key = f"{rel.strip('/')}/{path.relative_to(root).as_posix()}"
        if once:
            wrote += store.remote.put_once(key, path.read_bytes())
        else:
            store.remote.put(key, path.read_bytes())
            wrote += 1
    return wrote


def fetch_tree(store: TableStore, rel: str) -> int:
    """Bring every object under ``rel/`` that this machine lacks into the work dir; files fetched."""
    if store.remote is None:
        return 0
    root = store.data_dir / rel
    got = 0
    for name in store.remote.listing(rel):
        dest = root / name
        if not dest.is_file():
            store.remote.download(f"{rel.strip('/')}/{name}", dest)
            got += 1
    return got


def presigned_url(store: TableStore, key: str, expires_s: int | None = None) -> str:
    """A time-limited HTTPS URL for one object (review media, an export's file), for a reader
    that holds no credentials (Label Studio, a browser); signed with this process's credentials,
    which appear in the URL only as the access key id and a signature, never the secret."""
    if store.remote is None:
        raise ValueError(f"{store.location} is a local data dir: its files have no pre-signed URL")
    expires = int(expires_s or os.environ.get(PRESIGN_ENV, "") or DEFAULT_PRESIGN_S)
    return store.remote.presign(key, expires)
