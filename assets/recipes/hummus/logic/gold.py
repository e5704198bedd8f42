"""Hummus's gold rules (forge/gold/apply.py): a built item takes the released annotation of the
item with the same caption (normalised: case, spaces, final punctuation) and task."""

from __future__ import annotations

from typing import Any

from forge.benchmarks.spec import GoldRules
from forge.checks.text import canonical
from forge.items.cells import as_object


def match_key(row: dict[str, Any]) -> tuple[str, str] | None:
    cap = as_object(row.get("extra")).get("caption")
    return (canonical(cap), str(row["task"])) if cap else None


GOLD = GoldRules(
    fields={
        "verdict": ("classification",),
        "metaphors": ("naming",),
        "boxes": ("image_box", "image_label"),  # and labels.boxes
        "spans": ("caption_highlight",),
        "explanations": ("explanation",),
        "descriptions": (),  # extra.image_description of every task (the §6.3 setting reads it)
    },
    default_fields=("boxes", "spans", "descriptions"),
    labels_keys={"boxes": ("boxes",)},
    extra_keys={"descriptions": ("image_description",)},
)
