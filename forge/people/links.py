"""Served folders hold regular files only (docs/security.md, "Label Studio's files").

Label Studio serves ``/data/local-files/?d=<path>`` for any file below a local-files storage's
folder and opens what it finds there, following links: a symlink placed in ``<data dir>/media``
served ``/etc/passwd`` and the admin token to any logged-in user. The project only ever places
regular files there (copies, or hard links of its own downloads), so anything else found in a
served folder is refused: a symbolic link, a FIFO or device, or a hard link to one of the tool's
own secret files. The entry (the link itself, never its target) is moved out of the served
folder into ``<data dir>/review/refused-links/`` (0700) and reported, in the log and in
``refused.jsonl`` there. ``make review`` checks at start and every ``WATCH_S`` seconds while it
runs; every push checks its storage folder before it names a file in it.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

log = logging.getLogger(__name__)

QUARANTINE = "review/refused-links"  # under the data dir: outside every served folder
BLIND_MEDIA = "review/blind"  # the blind baseline's media (the blind instance's document root)
WATCH_S = 15.0


@dataclass(frozen=True)
class Refused:
    path: str  # where it was, relative to the data dir
    reason: str  # symlink | not_a_regular_file | hard_link_to_secret
    detail: str  # the link's target, or the file kind
    moved_to: str  # relative to the data dir ("" when it could only be removed)
    at: str


def served_folders(data_dir: Path) -> list[Path]:
    """The folders the project's storages serve: the media of review and protocol tasks, and the
    blind baseline's re-encoded media."""
    return [data_dir / "media", data_dir / BLIND_MEDIA]


def _secrets(data_dir: Path) -> set[tuple[int, int]]:
    """(device, inode) of every file in the tools' private folders: a hard link to one of them in
    a served folder is a regular file with a secret's bytes."""
    out = set()
    review = data_dir / "review"
    for home in (review, review / "blind-studio"):
        for p in home.iterdir() if home.is_dir() else ():
            if p.is_file() and not p.is_symlink():
                st = p.stat()
                out.add((st.st_dev, st.st_ino))
        for root, _dirs, files in os.walk(home / "label-studio"):
            for f in files:
                st = os.lstat(os.path.join(root, f))
                out.add((st.st_dev, st.st_ino))
    return out


def _why(p: Path, st: os.stat_result, secrets: set[tuple[int, int]]) -> tuple[str, str] | None:
    if stat.S_ISLNK(st.st_mode):
        return "symlink", f"a link to {os.readlink(p)}"
    if stat.S_ISDIR(st.st_mode):
        return None
    if not stat.S_ISREG(st.st_mode):
        return "not_a_regular_file", stat.filemode(st.st_mode)
    if st.st_nlink > 1 and (st.st_dev, st.st_ino) in secrets:
        return "hard_link_to_secret", "the same file as one of Label Studio's private files"
    return None


def _move_away(p: Path, data_dir: Path, quarantine: Path, stamp: str) -> str:
    quarantine.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(quarantine, 0o700)
    rel = p.relative_to(data_dir).as_posix().replace("/", "__")
    dst = quarantine / f"{stamp}-{rel}"
    try:
        os.rename(p, dst)  # moves the entry itself: a link stays a link, its target is untouched
        return dst.relative_to(data_dir).as_posix()
    except OSError:
        p.unlink()  # another file system: only the entry goes (for a link, not what it points to)
        return ""


def refuse_links(data_dir: Path, folders: Iterable[Path] | None = None) -> list[Refused]:
    """Check ``folders`` (default: every served folder of the data dir); each entry that is not a
    regular file of our own is moved out and reported. Returns what was refused."""
    data_dir = Path(data_dir).resolve()
    secrets = _secrets(data_dir)
    quarantine = data_dir / QUARANTINE
    now = datetime.now(UTC)
    stamp = now.strftime("%Y%m%dT%H%M%S%fZ")
    out: list[Refused] = []
    for folder in folders if folders is not None else served_folders(data_dir):
        folder = Path(folder)
        if folder.is_symlink():  # the served folder itself: refused as a whole
            found = [(folder, os.lstat(folder))]
        elif not folder.is_dir():
            continue
        else:
            found = []
            for root, dirs, files in os.walk(folder, followlinks=False):
                for name in dirs + files:
                    p = Path(root) / name
                    found.append((p, os.lstat(p)))
        for p, st in found:
            why = _why(p, st, secrets)
            if why is None:
                continue
            moved = _move_away(p, data_dir, quarantine, stamp)
            r = Refused(p.relative_to(data_dir).as_posix(), why[0], why[1], moved, now.isoformat())
            out.append(r)
            log.warning("refused in a served folder: %s (%s: %s); moved to %s", r.path, r.reason, r.detail, moved)
    if out:
        with open(quarantine / "refused.jsonl", "a", encoding="utf-8") as f:
            os.chmod(quarantine / "refused.jsonl", 0o600)
            for r in out:
                f.write(json.dumps(asdict(r)) + "\n")
    return out
