"""The foil stage's own checks, applied to a reviewer's edit of one pair of a pool (``ReviewSpec.member_check``,
``forge/review/units.py``): the paper fixed statements and foils by hand (App. A.8); an edit that
the recipe would not have kept is refused with its reason and the original stays.

* the foil must differ from the statement, and by a minimal edit (token edit ratio ≤
  ``foils.max_edit_ratio``, the recipe's ``minimal_edit_check``, App. A.7);
* the statement must not repeat another pair's statement of the same pool;
* the NLI contradiction test and the structural judge need a model and are not run on a
  reviewer's edit: the reviewer is the judge here (README, "Differences from the paper").
"""

from __future__ import annotations

from typing import Any

from forge.benchmarks.settings import recipe_settings
from forge.checks.text import canonical

from .foils import edit_size
from .language import recipe_language

SV = "statement_verification"


def pair(item: dict[str, Any]) -> tuple[str, str] | None:
    """(statement, foil) of a statement-verification item, by its option types."""
    opts, types = list(item.get("options") or []), list(item.get("option_types") or [])
    if item.get("task") != SV or len(opts) != len(types):
        return None
    st = [str(o) for o, t in zip(opts, types, strict=True) if t == "correct"]
    fo = [str(o) for o, t in zip(opts, types, strict=True) if t != "correct"]
    return (st[0], fo[0]) if len(st) == 1 and len(fo) == 1 else None


def member_check(new: dict[str, Any], old: dict[str, Any], others: list[dict[str, Any]]) -> str | None:
    """Why an edited pair is refused (None when the recipe would keep it)."""
    now, was = pair(new), pair(old)
    if now is None or now == was:
        return None
    statement, foil = now
    cfg = recipe_settings("maia")
    lang = recipe_language(cfg)
    limit = float((cfg.get("foils") or {}).get("max_edit_ratio", 0.6))
    if canonical(foil) == canonical(statement):
        return "identical_foil: the foil is the statement itself (a foil must make it false)"
    _, ratio = edit_size(statement, foil, lang)
    if ratio > limit:
        return (
            f"not_minimal_edit: the foil changes {ratio:.0%} of the statement's words "
            f"(foils.max_edit_ratio {limit:.0%}; App. A.7: a minimal, category-specific edit)"
        )
    for o in others:
        p = pair(o)
        if p is not None and canonical(p[0]) == canonical(statement):
            return f"duplicate_statement: item {o['item_id']} of the same pool already states {statement[:80]!r}"
    return None
