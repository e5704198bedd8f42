"""A tool or weights file the step needs is missing: one clear failure, never one reject per item.

A per-item ``except`` turns an item's bad input into a reject row; it must not turn a missing
``ffmpeg`` or missing OCR weights into "every item rejected" on a green run. Steps check what
they need once, up front, and raise ``MissingDependency`` with what to set.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


class MissingDependency(RuntimeError):
    """A binary or weights file the step cannot run without."""


def require_binary(path: str, what: str, hint: str = "") -> str:
    """``path`` (a file or a name on PATH) when it is an executable, else ``MissingDependency``."""
    found = shutil.which(path) or (path if Path(path).is_file() and os.access(path, os.X_OK) else None)
    if not found:
        raise MissingDependency(f"{what} not found or not executable: {path!r}" + (f" — {hint}" if hint else ""))
    return found
