"""Hummus label sets as data (``taxonomy.yaml``)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

TAXONOMY_PATH = Path(__file__).with_name("taxonomy.yaml")


@cache
def taxonomy() -> dict[str, Any]:
    return yaml.safe_load(TAXONOMY_PATH.read_text())


def verdicts() -> list[str]:
    return list(taxonomy()["verdicts"])


def metaphorical() -> list[str]:
    return list(taxonomy()["metaphorical"])


def devices() -> list[str]:
    return list(taxonomy()["devices"])


def normalise_device(raw: Any) -> str | None:
    if not isinstance(raw, str):
        return None
    t = " ".join(raw.strip().lower().split())
    t = taxonomy().get("device_aliases", {}).get(t, t)
    return t if t in taxonomy()["devices"] else None
