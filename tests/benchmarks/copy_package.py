"""Copy a paper's package under a new name: every file and folder name and every mention of the old
name (as written, capitalised and upper-case) becomes the new one. What a researcher does to start a
sixth paper from an existing one (docs/benchmarks.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

TEXT_SUFFIXES = {".py", ".yaml", ".yml", ".md", ".json", ".txt"}


def renamed(text: str, old: str, new: str) -> str:
    for a, b in ((old, new), (old.capitalize(), new.capitalize()), (old.upper(), new.upper())):
        text = text.replace(a, b)
    return text


def copy_package(source: Path, dest: Path, old: str, new: str) -> Path:
    """``source`` copied to ``dest`` with ``old`` renamed ``new`` in names and text files."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in sorted(dest.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_file() and path.suffix in TEXT_SUFFIXES:
            path.write_text(renamed(path.read_text(), old, new))
        if old in path.name:
            path.rename(path.with_name(renamed(path.name, old, new)))
    return dest
