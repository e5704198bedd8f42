"""The vision stages' settings, ``config/vision.yaml``, read when asked (never at import).

Run-config and resource fields take their defaults through ``vision_default`` (a pydantic
``default_factory``): the file is read when a run or a definitions load builds the config, so
an edit is seen by the next run and the next load, and importing a module reads nothing.
Parsing is cached per file version.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path
from typing import Any

from forge.storage.yaml_files import read_yaml

VISION_CONFIG = Path(__file__).resolve().parents[2] / "config" / "vision.yaml"


@lru_cache(maxsize=8)
def _parsed(path: str, mtime_ns: int) -> dict[str, Any]:
    return read_yaml(path) or {}


def vision_settings(path: Path = VISION_CONFIG) -> dict[str, Any]:
    """The whole file as a fresh dict (``{}`` when it is absent)."""
    if not path.exists():
        return {}
    return copy.deepcopy(_parsed(str(path), path.stat().st_mtime_ns))


def vision_section(section: str) -> dict[str, Any]:
    """One top-level section (``decode``, ``detection``, ``rich_scenes``...), ``{}`` when absent."""
    return dict(vision_settings().get(section) or {})


def vision_default(section: str, key: str, fallback: Any, cast: type | None = None) -> Any:
    """A ``dg.Config`` / resource field whose default is ``<section>.<key>`` of config/vision.yaml,
    read when the config object is built (``default_factory``), not when its class is defined."""
    from pydantic import Field

    def read() -> Any:
        value = vision_section(section).get(key, fallback)
        return cast(value) if cast is not None and value is not None else value

    return Field(default_factory=read)
