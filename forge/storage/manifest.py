"""Which file holds each partition of a table: ``tables/<table>/_manifest.json``.

A partition's rows are never rewritten in place. A write puts them in a file of their own
(``<part>.<stamp>.parquet``) and then swaps the manifest (a small JSON file, replaced with
``os.replace``): readers read the manifest whole, so they see the old or the new file set, never
a mix, and the file they were given is not changed under them. DuckDB reads a Parquet file by
path more than once per query (its footer when binding, its pages when scanning), so a file
replaced in place could hand it the pages of another file (``TProtocolException: Invalid data``).

The file a write supersedes is *retired*: it stays on disk, listed in the manifest. Once a
catalog that no longer names it is in place, the publish that swapped that catalog in stamps it
*unlisted*; it is deleted when that stamp is older than the grace period
(``SUBTEXT_TABLE_GRACE_S``, default one hour). So a query, or a catalog connection, that was
given a file keeps reading it for at least the grace period. Files a killed write left behind
(never listed) go once they are older than the grace period.

A table directory without a manifest (written before manifests existed) holds one
``<part>.parquet`` per partition; the first write makes its manifest from those files.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock

MANIFEST = "_manifest.json"
LOCK = ".manifest.lock"
GRACE_ENV = "SUBTEXT_TABLE_GRACE_S"
DEFAULT_GRACE_S = 3600.0  # far beyond any query; retired files cost disk for this long
LOCK_TIMEOUT_S = 120  # a manifest update takes milliseconds; only a hung writer holds it longer


def grace_s() -> float:
    """Seconds a file stays readable after the catalog stops naming it (``SUBTEXT_TABLE_GRACE_S``)."""
    raw = os.environ.get(GRACE_ENV, "").strip()
    if not raw:
        return DEFAULT_GRACE_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{GRACE_ENV}={raw!r} is not a number of seconds") from None
    if not value >= 0:  # NaN too
        raise ValueError(f"{GRACE_ENV}={raw!r} must be 0 or more seconds")
    return value


@dataclass
class Manifest:
    parts: dict[str, str] = field(default_factory=dict)  # partition -> its live file's name
    retired: dict[str, float] = field(default_factory=dict)  # file name -> when a write superseded it
    unlisted: dict[str, float] = field(default_factory=dict)  # retired file -> when no catalog opened since names it


def load(table_dir: Path) -> Manifest:
    """The table's manifest; for a directory written before manifests, its ``<part>.parquet`` files."""
    path = table_dir / MANIFEST
    try:
        text = path.read_text()
    except FileNotFoundError:
        if not table_dir.is_dir():
            return Manifest()
        return Manifest(parts={p.stem: p.name for p in table_dir.glob("*.parquet")})
    return parse(text, str(path))


def parse(text: str | bytes, where: str) -> Manifest:
    """A manifest from its JSON (``where`` names it in the error)."""
    try:
        raw = json.loads(text)
    except ValueError as exc:  # written whole and swapped in, so only a hand edit gets here
        raise ValueError(f"{where} is not a table manifest: {exc}") from exc
    return Manifest(
        parts=dict(raw.get("parts", {})),
        retired={k: float(v) for k, v in raw.get("retired", {}).items()},
        unlisted={k: float(v) for k, v in raw.get("unlisted", {}).items()},
    )


def dumps(m: Manifest) -> str:
    return json.dumps({"parts": dict(sorted(m.parts.items())), "retired": m.retired, "unlisted": m.unlisted})


def apply_publish(m: Manifest, part: str, name: str | None, now: float) -> str | None:
    """Make ``name`` the partition's file in ``m`` (``None``: drop it); returns the file it retired."""
    old = m.parts.pop(part, None)
    if name is not None:
        m.parts[part] = name
    if old is not None and old != name:
        m.retired[old] = now
    return old


def new_file_name(part: str) -> str:
    """A name no earlier write used: a reader given the old file never gets these bytes."""
    return f"{part}.{time.time_ns():x}{secrets.token_hex(3)}.parquet"


def ensure(table_dir: Path) -> None:
    """Give the directory its manifest (from its ``<part>.parquet`` files when it predates
    manifests) before a write adds a file that is not a partition of its own."""
    if (table_dir / MANIFEST).exists():
        return
    with _locked(table_dir):
        if not (table_dir / MANIFEST).exists():
            _save(table_dir, load(table_dir))


def publish(table_dir: Path, part: str, name: str | None) -> str | None:
    """Make ``name`` the partition's file (``None``: drop the partition); returns the file it
    retired. One atomic manifest swap: readers see the old file or the new one, never both."""
    with _locked(table_dir):
        m = load(table_dir)
        old = apply_publish(m, part, name, time.time())
        if old != name:
            _save(table_dir, m)
    return old


def sweep(table_dir: Path, unlisted_before: float, grace: float) -> int:
    """Called once a catalog built from manifests read after ``unlisted_before`` is in place:
    stamp the files retired before then as unlisted now, and delete those unlisted ``grace``
    seconds ago or more and the files a killed write left (older than ``grace``); returns how
    many were deleted. A crash mid-way leaves names of deleted files, which the next sweep drops."""
    now = time.time()
    if not any(_work(load(table_dir), table_dir, unlisted_before, now, grace)):
        return 0
    with _locked(table_dir):
        m = load(table_dir)  # again, under the lock: a write may have landed meanwhile
        stamp, due, strays = _work(m, table_dir, unlisted_before, now, grace)
        m.unlisted.update(dict.fromkeys(stamp, now))
        for name in due:
            (table_dir / name).unlink(missing_ok=True)
            m.retired.pop(name, None)
            m.unlisted.pop(name, None)
        for p in strays:
            p.unlink(missing_ok=True)
        if stamp or due:
            _save(table_dir, m)
    return len(due) + len(strays)


def _work(
    m: Manifest, table_dir: Path, unlisted_before: float, now: float, grace: float
) -> tuple[list[str], list[str], list[Path]]:
    """(retired files to stamp unlisted now, files whose grace period is over, a killed write's files)."""
    stamp, due = due_files(m, unlisted_before, now, grace)
    known = set(m.parts.values()) | set(m.retired)
    strays = [table_dir / n for n in _data_files(table_dir) if n not in known and _mtime(table_dir / n) <= now - grace]
    return stamp, due, strays


def due_files(m: Manifest, unlisted_before: float, now: float, grace: float) -> tuple[list[str], list[str]]:
    """(retired files to stamp unlisted now, files whose grace period is over)."""
    live = set(m.parts.values())
    stamp = [n for n, t in m.retired.items() if t < unlisted_before and n not in m.unlisted and n not in live]
    unlisted = {**m.unlisted, **dict.fromkeys(stamp, now)}
    due = [n for n, t in unlisted.items() if t <= now - grace and n not in live]
    return stamp, due


@contextmanager
def _locked(table_dir: Path) -> Iterator[None]:
    table_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(table_dir / LOCK), timeout=LOCK_TIMEOUT_S):
        yield


def _save(table_dir: Path, m: Manifest) -> None:
    text = dumps(m)
    fd, tmp = tempfile.mkstemp(dir=table_dir, prefix=".manifest.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, table_dir / MANIFEST)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _data_files(table_dir: Path) -> list[str]:
    """Names of the Parquet files and of the temporary files of writes (``.<name>.tmp``) in the directory."""
    try:
        names = os.listdir(table_dir)
    except FileNotFoundError:
        return []
    return [n for n in names if n.endswith(".parquet") or (n.startswith(".") and n.endswith(".tmp"))]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return float("inf")  # gone already
