"""Hummus label sets (§4.1, §4.2, §5) as data, declared here so that the human step's form
(``logic/protocol.py``, part of the spec) is plain data built without reading a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# The file whose content versions the stages that use these sets (``assets.py``'s code versions).
TAXONOMY_PATH = Path(__file__)

_TAXONOMY: dict[str, Any] = {
    "verdicts": ["Yes", "No", "WIDLII", "Discard"],  # WIDLII = While In Doubt, Leave It In
    "metaphorical": ["Yes", "WIDLII"],  # get the detailed metaphor annotation (§4.2)
    # "Other figurative devices, such as pun, idiom, irony, hyperbole" (§4.2); §5 reports pun,
    # exaggeration and satire as the most frequent.
    "devices": [
        "pun",
        "idiom",
        "irony",
        "sarcasm",
        "satire",
        "hyperbole",
        "understatement",
        "exaggeration",
        "metonymy",
        "allusion",
        "parody",
        "wordplay",
        "oxymoron",
        "paradox",
        "euphemism",
        "absurdity",
    ],  # fmt: skip
    # §2: simile, personification and zoomorphism are metaphor use under CMT (anthropomorphism is
    # personification), so they are never "other" devices (§5 excludes them too): named as a device,
    # they are dropped from `devices` with a note in `repairs`, not rejected.
    "metaphor_types": ["simile", "personification", "zoomorphism", "anthropomorphism"],
    "device_aliases": {
        "puns": "pun",
        "idioms": "idiom",
        "ironic": "irony",
        "satirical": "satire",
        "hyperbolic": "hyperbole",
        "exaggerate": "exaggeration",
        "play on words": "wordplay",
        "word play": "wordplay",
    },  # fmt: skip
}


def taxonomy() -> dict[str, Any]:
    return _TAXONOMY


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
