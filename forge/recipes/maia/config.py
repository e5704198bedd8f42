"""The recipe's settings: ``config/recipes/maia.yaml`` (``SUBTEXT_MAIA_CONFIG`` points elsewhere)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

DEFAULT_CONFIG = Path(__file__).resolve().parents[3] / "config" / "recipes" / "maia.yaml"


def config_path() -> Path:
    return Path(os.environ.get("SUBTEXT_MAIA_CONFIG") or DEFAULT_CONFIG)


def load_config(path: str | Path | None = None) -> dict[str, Any]:
    return yaml.safe_load(Path(path or config_path()).read_text()) or {}
