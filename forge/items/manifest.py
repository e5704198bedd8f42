"""An export's manifest as readers find it: the versions of a benchmark's exports and each
version's ``manifest.json`` (``forge/export/write.py`` writes them; evaluations read them)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
_VERSION = re.compile(r"^v(\d+)$")


def existing_versions(bench_dir: Path) -> list[tuple[int, Path]]:
    if not bench_dir.is_dir():
        return []
    out = []
    for d in bench_dir.iterdir():
        m = _VERSION.match(d.name)
        if m and (d / MANIFEST).is_file():
            out.append((int(m.group(1)), d))
    return sorted(out)


def read_manifest(path: Path) -> dict[str, Any]:
    return json.loads((path / MANIFEST).read_text())
