"""ViMU's gold rules (forge/gold/apply.py): matched on the question text and the category;
``annotations`` replaces answer, references, options and option types of OE / EG / RM / SV."""

from __future__ import annotations

from typing import Any

from forge.benchmarks.spec import GoldRules
from forge.checks.text import canonical


def match_key(row: dict[str, Any]) -> tuple[str, str] | None:
    return canonical(str(row.get("question") or "")), str(row.get("category"))


GOLD = GoldRules(
    fields={"annotations": ("open_ended", "multi_select")},
    default_fields=("annotations",),
)
