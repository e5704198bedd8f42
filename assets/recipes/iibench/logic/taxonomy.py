"""II-Bench label sets (App. B.2) as data, and their validation.

The sets live in ``taxonomy.yaml`` next to this file so that a reader (or a prompt) sees
exactly what is allowed; this module normalises spellings and says what is wrong.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

TAXONOMY_PATH = Path(__file__).with_name("taxonomy.yaml")
SINGLE_AXES = ("image_type", "domain", "emotion", "difficulty")
MULTI_AXES = ("rhetoric",)
AXES = SINGLE_AXES + MULTI_AXES


@cache
def taxonomy(path: str = str(TAXONOMY_PATH)) -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load(Path(path).read_text())
    missing = [a for a in AXES if a not in doc]
    if missing:
        raise ValueError(f"{path}: axes missing: {missing}")
    out = {}
    for a in AXES:
        vals, official = list(doc[a]["values"]), dict(doc[a].get("official") or {})
        if set(official) != set(vals):
            raise ValueError(f"{path}: {a}.official must spell every value once: {sorted(set(vals) ^ set(official))}")
        out[a] = {"values": vals, "aliases": dict(doc[a].get("aliases") or {}), "official": official}
    return out


def values(axis: str) -> list[str]:
    return taxonomy()[axis]["values"]


def normalise_label(axis: str, raw: Any) -> str | None:
    """Canonical label for ``raw`` on ``axis`` (case, spaces, aliases), or None when unknown."""
    if not isinstance(raw, str):
        return None
    t = " ".join(raw.strip().lower().replace("_", " ").split())
    ax = taxonomy()[axis]
    t = ax["aliases"].get(t, t)
    return t if t in ax["values"] else None


def official_label(axis: str, label: Any) -> str:
    """How the official release spells a label (``Others``, ``Visual Dislocation``): the keyword
    prompts print it so. A label outside the taxonomy (kept as released) is printed as it is."""
    canonical = normalise_label(axis, label)
    return taxonomy()[axis]["official"][canonical] if canonical else str(label)


def validate_labels(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Normalised labels and the problems found (empty list when valid).

    Single-label axes need exactly one known value; rhetoric needs one or more known,
    distinct values (order kept, duplicates after normalisation dropped).
    """
    out: dict[str, Any] = {}
    problems: list[str] = []
    for axis in SINGLE_AXES:
        raw = data.get(axis)
        norm = normalise_label(axis, raw)
        if norm is None:
            problems.append(f"{axis}: {raw!r} is not one of {values(axis)}")
        out[axis] = norm
    raw_r = data.get("rhetoric")
    if isinstance(raw_r, str):
        raw_r = [raw_r]
    rhet: list[str] = []
    for r in raw_r or []:
        norm = normalise_label("rhetoric", r)
        if norm is None:
            problems.append(f"rhetoric: {r!r} is not one of {values('rhetoric')}")
        elif norm not in rhet:
            rhet.append(norm)
    if not raw_r:
        problems.append("rhetoric: at least one device is required")
    out["rhetoric"] = rhet
    return out, problems
