"""The blind baseline's own Label Studio (docs/review.md, "Two rooms").

Label Studio's community edition shows every project of its one organisation to every member, so
a participant invited where the review projects live could open the gold. The human baseline's
tasks therefore live on a second instance, started by ``make review`` beside the first: its own
data folder (``<data dir>/review/blind-studio/label-studio``, its own SQLite), its own admin and
API token (``<data dir>/review/blind-studio/admin.json``, 0600), its own accounts, its own port
(``config/review.yaml`` ``server.blind_port``; default the review port + 1;
``SUBTEXT_REVIEW_BLIND_PORT`` / ``SUBTEXT_REVIEW_BLIND_URL`` / ``SUBTEXT_REVIEW_BLIND_TOKEN`` /
``SUBTEXT_REVIEW_BLIND_PASSWORD`` / ``SUBTEXT_REVIEW_BLIND_USER`` override). It serves only
``<data dir>/review/blind`` (re-encoded media, ``forge.evals.human``). The review instance
does not know its users, and it does not know the review instance's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

from forge.people.config import Server, _credentials, _record_address, load_doc, recorded_address, server
from forge.people.links import BLIND_MEDIA
from forge.storage.location import Remote, is_remote, location_of, open_remote

HOME = "review/blind-studio"
KEYS = "task_keys.json"  # the secret behind the blind tasks' opaque keys (0600)


def blind_server(data_dir: Path, create: bool = False, path: Path | None = None) -> Server:
    """The blind instance's settings; ``create`` (its own start) makes its credentials file when
    missing and records the address it listens on, which clients then read."""
    cfg = load_doc(path).get("server") or {}
    review = server(Path(data_dir), path=path)
    home = Path(data_dir).resolve() / HOME
    seen = {} if create else recorded_address(home)  # the same record as the review room's, in its home
    env_port = os.environ.get("SUBTEXT_REVIEW_BLIND_PORT")
    port = int(env_port or seen.get("port") or cfg.get("blind_port") or review.port + 1)
    url = os.environ.get("SUBTEXT_REVIEW_BLIND_URL") or (
        str(seen["url"]) if seen.get("url") and not env_port else f"http://{review.host}:{port}"
    )
    creds = _credentials(home, create)
    if create:
        _record_address(home, url, review.host, port)
    return Server(
        url=url,
        host=review.host,
        port=port,
        username=os.environ.get("SUBTEXT_REVIEW_BLIND_USER") or str(cfg.get("blind_username", "admin@blind.local")),
        password=os.environ.get("SUBTEXT_REVIEW_BLIND_PASSWORD") or creds.get("password", ""),
        token=os.environ.get("SUBTEXT_REVIEW_BLIND_TOKEN") or creds.get("token", ""),
        secret_key=creds.get("secret_key", ""),
        home=home,
        document_root=Path(data_dir).resolve() / BLIND_MEDIA,
    )


def _key_secret(data_dir: Path) -> bytes:
    """The secret behind the blind keys, one per store: on a local data dir a random secret made
    once (``<blind home>/task_keys.json``, 0600); on object storage one object in the bucket
    (``_shared_secret``), so every machine computes the same keys."""
    home = Path(data_dir).resolve() / HOME
    location = location_of(Path(data_dir).resolve())
    if is_remote(location):
        return _shared_secret(open_remote(location), home)
    f = home / KEYS
    if not f.is_file():
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # made meanwhile by a concurrent run
            pass
        else:
            with os.fdopen(fd, "w") as out:
                json.dump({"secret": secrets.token_hex(32)}, out)
    return bytes.fromhex(json.loads(f.read_text())["secret"])


_SHARED: dict[tuple[str, Path], bytes] = {}  # (bucket URL, this machine's blind home) -> the secret, read once


def _shared_secret(remote: Remote, home: Path) -> bytes:
    """The bucket's secret (object ``review/blind-studio/task_keys.json``), written only if absent
    (``If-None-Match: *``): the first machine to need it makes it, every other one reads that one,
    so a push from another machine or a fresh pod keeps the blind tasks' keys. A machine that made
    its own file in its work dir before (blind tasks already pushed with it) offers that secret,
    so the first such push keeps its tasks. Never logged; no URL of it is ever signed."""
    cached = _SHARED.get((remote.url, home))
    if cached is not None:
        return cached
    key = f"{HOME}/{KEYS}"
    got = remote.get(key)
    if got is None:
        mine = home / KEYS
        offered = json.loads(mine.read_text())["secret"] if mine.is_file() else secrets.token_hex(32)
        remote.put_once(key, json.dumps({"secret": offered}).encode())
        got = remote.get(key)  # whoever wrote first: this call or a concurrent machine
    try:
        secret = bytes.fromhex(json.loads(got[0] if got else b"")["secret"])
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"the blind task-key secret {remote.url_of(key)} is unreadable (not shown)") from None
    _SHARED[(remote.url, home)] = secret
    return secret


def blind_key(data_dir: Path, *parts: str) -> str:
    """An opaque key for a blind task or its media: a keyed hash (HMAC-SHA256) of ``parts`` under
    the data dir's secret, so it is stable for one item revision (a re-push keeps the task) but
    no one without the secret can compute it from an item id, nor match it to a review task.
    ``review_tasks`` maps each key back to its item."""
    msg = "\x1f".join(parts).encode()
    return hmac.new(_key_secret(data_dir), msg, hashlib.sha256).hexdigest()[:20]
