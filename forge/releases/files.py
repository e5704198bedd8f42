"""A release's files as the importers see them: folder links followed (a release whose images
live on another disk is the usual case), every file held to the release's roots by its
resolved path.

Roots (docs/security.md, "Releases on another disk"): the release folder (a config entry's
path, resolved: the operator named it), the data dir, ``allowed_roots`` in the releases config
and ``SUBTEXT_ALLOWED_ROOTS``. A file whose resolved path lies outside every root is not read:
it comes back in ``escaped`` and the importer rejects it ``symlink_escape``, naming the setting
that allows it. Only regular files are listed (a FIFO named ``x.json`` would block a read).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from forge.releases.config import ReleaseInfo

ROOTS_ENV = "SUBTEXT_ALLOWED_ROOTS"


def env_roots() -> list[Path]:
    """``SUBTEXT_ALLOWED_ROOTS`` (comma- or ``os.pathsep``-separated), resolved."""
    raw = os.environ.get(ROOTS_ENV, "").replace(os.pathsep, ",")
    return [Path(x.strip()).resolve() for x in raw.split(",") if x.strip()]


def within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def walk(top: Path) -> Iterator[Path]:
    """Every entry under ``top`` (lexical paths), folder links followed once each: a link
    back to a folder already visited (a cycle) is not entered again."""
    seen: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(top, followlinks=True):
        st = os.stat(dirpath)
        if (st.st_dev, st.st_ino) in seen:
            dirnames[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirnames.sort()
        for name in sorted(filenames):
            yield Path(dirpath) / name


@dataclass
class ReleaseFiles:
    """The regular files of a release inside its roots, their resolved paths, and the escapes."""

    root: Path
    files: list[Path] = field(default_factory=list)  # lexical paths, sorted
    real: dict[Path, Path] = field(default_factory=dict)  # lexical -> resolved
    escaped: list[Path] = field(default_factory=list)  # lexical paths whose target is outside the roots
    roots: list[Path] = field(default_factory=list)

    def label(self, f: Path) -> str:
        """How rejects name a file: its path inside the release folder."""
        return str(f.relative_to(self.root)) if self.root.is_dir() and f.is_relative_to(self.root) else f.name

    def with_suffix(self, suffixes: Iterable[str]) -> list[Path]:
        sufs = tuple(s.lower() for s in suffixes)
        return [f for f in self.files if f.suffix.lower() in sufs and not f.name.startswith(".")]

    def index(self, suffixes: Iterable[str]) -> dict[str, Path]:
        """File name and stem (lower-cased) and path inside the release -> resolved path."""
        idx: dict[str, Path] = {}
        for f in self.with_suffix(suffixes):
            real = self.real[f]
            idx.setdefault(self.label(f).lower(), real)
            idx.setdefault(f.name.lower(), real)
            idx.setdefault(f.stem.lower(), real)
        return idx

    def escape_detail(self, f: Path) -> str:
        target = os.path.realpath(f)
        return (
            f"{self.label(f)} resolves to {target}, outside the release's roots "
            f"({', '.join(map(str, self.roots))}); to allow a data disk, add it (or a folder above it) to "
            f"allowed_roots in the releases config or to {ROOTS_ENV}"
        )


def release_roots(info: ReleaseInfo) -> list[Path]:
    """The roots a release's files must resolve into (see the module docstring)."""
    roots = [Path(r).resolve() for r in info.roots] or [info.path.resolve()]
    return list(dict.fromkeys([*roots, *env_roots()]))


def scan(info: ReleaseInfo) -> ReleaseFiles:
    """The release's files: ``info.path`` itself when it is a file, else every file under it."""
    path = info.path
    out = ReleaseFiles(root=path, roots=release_roots(info))
    if path.is_file():
        candidates: Iterable[Path] = [path]
    elif path.is_dir():
        candidates = walk(path)
    else:
        raise FileNotFoundError(f"release path not found: {path}")
    for f in candidates:
        try:
            real = f.resolve(strict=True)
            mode = real.stat().st_mode
        except (OSError, RuntimeError):  # a dangling link or a link loop: nothing to read
            continue
        if not stat.S_ISREG(mode):
            continue
        if not any(within(real, r) for r in out.roots):
            out.escaped.append(f)
            continue
        out.files.append(f)
        out.real[f] = real
    return out
