"""The Label Studio server's address and admin credentials (``config/review.yaml`` ``server``).

Credentials: ``SUBTEXT_REVIEW_TOKEN`` / ``SUBTEXT_REVIEW_PASSWORD`` / ``SUBTEXT_REVIEW_USER``
from the environment; without them, ``make review`` generates them once into
``<data dir>/review/admin.json`` (mode 0600, never logged), for a server that listens on
127.0.0.1 only, and the review assets read them from there.

Address: ``SUBTEXT_REVIEW_URL`` / ``SUBTEXT_REVIEW_PORT``, else the address the last ``make
review`` started on (``<data dir>/review/address.json``, written at its start), else
``config/review.yaml``'s ``server`` (127.0.0.1:8080). So ``make review PORT=18080`` alone is
enough: ``make ui``'s sensors, the review assets and the CLI find it there.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forge.storage.yaml_files import read_yaml

ROOT = Path(__file__).resolve().parents[2]
CONFIG_PATH = ROOT / "config" / "review.yaml"
CREDENTIALS = "admin.json"
ADDRESS = "address.json"  # where the last started server listens: {"url", "host", "port"}


def load_doc(path: Path | None = None) -> dict[str, Any]:
    p = Path(os.environ.get("SUBTEXT_REVIEW_CONFIG") or path or CONFIG_PATH)
    return read_yaml(p) or {} if p.is_file() else {}


@dataclass(frozen=True)
class Server:
    url: str
    host: str
    port: int
    username: str
    password: str
    token: str
    secret_key: str
    home: Path  # <data dir>/review: Label Studio's SQLite database and files
    document_root: Path  # the data dir: tasks show its media through local-files storage


def _credentials(home: Path, create: bool) -> dict[str, str]:
    f = home / CREDENTIALS
    if f.is_file():
        return json.loads(f.read_text())
    if not create:
        return {}
    home.mkdir(parents=True, exist_ok=True)
    creds = {
        "password": secrets.token_urlsafe(18),
        "token": secrets.token_hex(20),  # Label Studio's legacy tokens are 40 hex characters
        "secret_key": secrets.token_urlsafe(40),  # stable Django sessions across restarts
    }
    fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(creds, out)
    return creds


def recorded_address(home: Path) -> dict[str, Any]:
    """What the last server start recorded ({} when none, or unreadable: the configured address)."""
    try:
        doc = json.loads((home / ADDRESS).read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _record_address(home: Path, url: str, host: str, port: int) -> None:
    home.mkdir(parents=True, exist_ok=True)
    tmp = home / f".{ADDRESS}.tmp"
    tmp.write_text(json.dumps({"url": url, "host": host, "port": port}))
    tmp.replace(home / ADDRESS)  # a reader never sees half a file


def server(data_dir: Path, create: bool = False, path: Path | None = None) -> Server:
    """The server's settings; ``create`` (the server's own start) makes the credentials file when it
    is missing and records the address it listens on; clients read that record where neither
    ``SUBTEXT_REVIEW_URL`` nor ``SUBTEXT_REVIEW_PORT`` is set."""
    cfg = load_doc(path).get("server") or {}
    host = str(cfg.get("host", "127.0.0.1"))
    home = Path(data_dir).resolve() / "review"
    seen = {} if create else recorded_address(home)
    port = int(os.environ.get("SUBTEXT_REVIEW_PORT") or seen.get("port") or cfg.get("port", 8080))
    url = os.environ.get("SUBTEXT_REVIEW_URL") or (
        str(seen["url"]) if seen.get("url") and not os.environ.get("SUBTEXT_REVIEW_PORT") else f"http://{host}:{port}"
    )
    creds = _credentials(home, create)
    if create:
        _record_address(home, url, host, port)
    return Server(
        url=url,
        host=host,
        port=port,
        username=os.environ.get("SUBTEXT_REVIEW_USER") or str(cfg.get("username", "admin@subtext.local")),
        password=os.environ.get("SUBTEXT_REVIEW_PASSWORD") or creds.get("password", ""),
        token=os.environ.get("SUBTEXT_REVIEW_TOKEN") or creds.get("token", ""),
        secret_key=creds.get("secret_key", ""),
        home=home,
        document_root=Path(data_dir).resolve(),
    )
