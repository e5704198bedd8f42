"""II-Bench label sets (App. B.2) as data, and their validation.

The sets are declared here (``_TAXONOMY``) so that a reader (or a prompt) sees exactly what is
allowed and the human step's form (``logic/protocol.py``, part of the spec) is plain data built
without reading a file; this module normalises spellings and says what is wrong.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

# The file whose content versions the stages that use these sets (``assets.py``'s code versions).
TAXONOMY_PATH = Path(__file__)
SINGLE_AXES = ("image_type", "domain", "emotion", "difficulty")
MULTI_AXES = ("rhetoric",)
AXES = SINGLE_AXES + MULTI_AXES

# Paper App. B.2 "Specific Instructions"; counts in §3.3 / Table 1. Values are the canonical
# lower-case labels stored in tables; ``aliases`` map spellings an annotator or model may use (the
# paper itself writes both "middle" and "medium", "others" and "other", "exaggerate" and
# "exaggeration") onto them; ``official`` is how the official release's ``meta_data`` spells each
# value (data/test.json), which the keyword prompts (domain / emotion / rhetoric modes of
# infer/data_loader.py) print as written.
_TAXONOMY: dict[str, dict[str, Any]] = {
    "image_type": {
        "values": ["single-panel comic", "multi-panel comic", "poster", "logo", "meme", "illustration", "painting"],
        "aliases": {
            "single panel comic": "single-panel comic",
            "multi panel comic": "multi-panel comic",
            "comic": "single-panel comic",
        },
        "official": {
            "single-panel comic": "Single-panel Comic",
            "multi-panel comic": "Multi-panel Comic",
            "poster": "Poster",
            "logo": "Logo",
            "meme": "Meme",
            "illustration": "Illustration",
            "painting": "Painting",
        },
    },
    "domain": {
        "values": ["life", "art", "society", "psychology", "environment", "other"],
        "aliases": {"others": "other"},
        "official": {
            "life": "Life",
            "art": "Art",
            "society": "Society",
            "psychology": "Psychology",
            "environment": "Environment",
            "other": "Others",
        },
    },
    "emotion": {
        "values": ["positive", "neutral", "negative"],
        "aliases": {},
        "official": {"positive": "Positive", "neutral": "Neutral", "negative": "Negative"},
    },
    "rhetoric": {  # multi-label, at least one
        "values": [
            "metaphor",
            "exaggerate",
            "symbolism",
            "contrast",
            "visual dislocation",
            "antithesis",
            "analogy",
            "personification",
            "other",
        ],
        "aliases": {
            "exaggeration": "exaggerate",
            "others": "other",
            "symbol": "symbolism",
            "visual-dislocation": "visual dislocation",
        },
        "official": {
            "metaphor": "Metaphor",
            "exaggerate": "Exaggerate",
            "symbolism": "Symbolism",
            "contrast": "Contrast",
            "visual dislocation": "Visual Dislocation",
            "antithesis": "Antithesis",
            "analogy": "Analogy",
            "personification": "Personification",
            "other": "Others",
        },
    },
    "difficulty": {
        "values": ["easy", "middle", "hard"],
        "aliases": {"medium": "middle"},
        "official": {"easy": "Easy", "middle": "Middle", "hard": "Hard"},
    },
}


@cache
def taxonomy() -> dict[str, dict[str, Any]]:
    """The label sets, checked: every axis present, ``official`` spelling every value once."""
    return parse_taxonomy(_TAXONOMY)


def parse_taxonomy(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    missing = [a for a in AXES if a not in doc]
    if missing:
        raise ValueError(f"II-Bench taxonomy: axes missing: {missing}")
    out = {}
    for a in AXES:
        vals, official = list(doc[a]["values"]), dict(doc[a].get("official") or {})
        if set(official) != set(vals):
            raise ValueError(
                f"II-Bench taxonomy: {a}.official must spell every value once: {sorted(set(vals) ^ set(official))}"
            )
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
