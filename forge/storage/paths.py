"""Paths stored in the data dir (table columns, ``environment.json``) are relative to it, so a
data dir copied or moved elsewhere reports its own files, not the original's.

``stored_path`` is what a writer stores; ``resolve_stored`` is what a reader shows or opens.
Rows written before paths were relative hold absolute paths: they are read by re-anchoring
them in the current data dir (the longest tail of the old path that exists there), else as
they are.
"""

from __future__ import annotations

import os
from pathlib import Path


def stored_path(path: str | os.PathLike[str], data_dir: str | os.PathLike[str]) -> str:
    """``path`` relative to ``data_dir`` (POSIX separators) when it lies inside it; otherwise
    the absolute path (a file outside the data dir does not move with it)."""
    p, root = Path(path).absolute(), Path(data_dir).absolute()
    if p == root or p.is_relative_to(root):
        return p.relative_to(root).as_posix() or "."
    resolved, real_root = p.resolve(), root.resolve()  # a data dir reached through a link
    if resolved.is_relative_to(real_root):
        return resolved.relative_to(real_root).as_posix() or "."
    return str(p)


def resolve_stored(stored: str | os.PathLike[str], data_dir: str | os.PathLike[str]) -> Path:
    """A stored path as a path on this machine: a relative one under ``data_dir``; an old
    absolute one re-anchored in ``data_dir`` when a tail of it exists there, else unchanged."""
    p, root = Path(stored), Path(data_dir)
    if not p.is_absolute():
        return root / p
    if p.is_relative_to(root.absolute()):
        return p
    parts = p.parts[1:]
    for i in range(len(parts)):  # longest tail first: /old/data/exports/x/v1 → <data>/exports/x/v1
        candidate = root.joinpath(*parts[i:])
        if candidate.exists():
            return candidate
    return p
