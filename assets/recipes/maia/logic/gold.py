"""MAIA's gold rules (forge/gold/apply.py): matched on the question text (normalised) and task.
``pools``: an open-ended item takes the human 8-answer pool (answer and references);
``statements``: a statement-verification item takes the released true / false pair at the same
pool position (the recipe counts from 0, the release from 1)."""

from __future__ import annotations

from typing import Any

from forge.benchmarks.spec import GoldRules
from forge.checks.text import canonical
from forge.items.cells import as_object


def match_key(row: dict[str, Any]) -> tuple[str, str] | None:
    if row.get("task") == "open_ended":
        return canonical(str(row.get("question") or "")), "open_ended"
    if row.get("task") == "statement_verification":
        q, pos = as_object(row.get("extra")).get("maia_question"), as_object(row.get("labels")).get("pool_index")
        if not q or pos is None:
            return None
        pos = int(pos) + (0 if row.get("origin") == "imported" else 1)
        return canonical(str(q)), f"statement_verification:{pos}"
    return None


GOLD = GoldRules(
    fields={"pools": ("open_ended",), "statements": ("statement_verification",)},
    default_fields=("pools", "statements"),
)
