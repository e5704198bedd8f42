"""What a reviewer's reject reason does to the rest of the benchmark (``ReviewSpec.consequences``),
Dagster-free.

* ``drop_source``: the unit the reason is about (the consequence's ``key``: the clip or image by
  default; Hummus' pair, MAIA's question where the reason names only that) leaves the benchmark:
  every other item of it is rejected too, with the reviewer's reason, whatever its own review says
  (as ViMU's filtering and II-Bench's Stage 3 inspection removed such sources); the other units
  of the same clip or image stay;
* ``regenerate``: the stage that made the faulted field is asked again for the item's unit
  (``forge/review/regenerate.py`` counts the attempts; the stage bumps its request's seed);
* ``drop_item``: the rejected item alone is dropped (the gate's plain reject).

An edit follows the recipe's own rules (the paper's ``hooks.follow_edit`` / ``recipe_drops``): Hummus'
edited Classification verdict updates the pair's labels, and a pair edited to No loses its detail
items, as ``hummus_items`` would build it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from forge.benchmarks.hooks import PaperHooks
from forge.benchmarks.review_spec import Action, ReviewSpec
from forge.items.cells import as_object


@dataclass(frozen=True)
class SourceDrop:
    """An item that leaves with its source: the reason and the rejected item that decided it."""

    reason: str
    source: str  # the source's key value (clip id, image id)
    rejected_item: str


def source_drops(items: pd.DataFrame, reasons: dict[str, str], spec: ReviewSpec) -> dict[str, SourceDrop]:
    """Every item whose source a ``drop_source`` reject removes -> why (the rejected items
    themselves included). ``reasons``: rejected item -> the reviewers' reason."""
    if items.empty:
        return {}
    ids = items["item_id"].astype(str)
    out: dict[str, SourceDrop] = {}
    keys: dict[str, pd.Series | None] = {}
    for item_id, reason in sorted(reasons.items()):
        c = spec.consequence(reason)
        if c is None or c.action != Action.DROP_SOURCE:
            continue
        col = keys[c.key] if c.key in keys else keys.setdefault(c.key, _key_values(items, c.key))
        if col is None:
            continue
        source = col[ids == item_id]
        if source.empty or source.iloc[0] is None:
            continue
        value = str(source.iloc[0])
        for member in ids[col == value]:
            out.setdefault(member, SourceDrop(reason, value, item_id))
    return out


def _key_values(items: pd.DataFrame, key: str) -> pd.Series | None:
    """Each item's value of ``key``: a column, or ``labels.<field>`` / ``extra.<field>`` (a field of
    that JSON column); None when the items have no such column."""
    where, _, name = key.partition(".")
    if key in items or where not in ("labels", "extra") or where not in items:
        if key not in items:
            return None
        return items[key].map(lambda v: None if v is None or (isinstance(v, float) and v != v) else str(v))
    return items[where].map(lambda v: None if as_object(v).get(name) is None else str(as_object(v).get(name)))


def apply_source_drops(
    items: pd.DataFrame, status: dict[str, str], reasons: dict[str, str], spec: ReviewSpec
) -> dict[str, SourceDrop]:
    """Mark every item of a dropped source ``rejected`` with the source's reason (in place), and
    return the drops; an item rejected for a reason of its own keeps that reason."""
    drops = source_drops(items, reasons, spec)
    for item_id, d in drops.items():
        status[item_id] = "rejected"
        reasons.setdefault(item_id, d.reason)
    return drops


def apply_recipe_drops(
    items: pd.DataFrame, status: dict[str, str], reasons: dict[str, str], hooks: PaperHooks
) -> dict[str, SourceDrop]:
    """Mark the items the recipe would no longer build from the current (edited) revisions
    ``rejected`` (the paper's ``hooks.recipe_drops``; Hummus: a pair edited to No keeps only its
    Classification), in place, and return them with the item whose edit decided it."""
    if items.empty:
        return {}
    unit = dict(zip(items["item_id"].astype(str), items.get("unit_id", items["item_id"]).astype(str), strict=True))
    out = {}
    for item_id, (why, by) in sorted(hooks.recipe_drops(items).items()):
        status[item_id] = "rejected"
        reasons[item_id] = why
        out[item_id] = SourceDrop(why, unit.get(item_id, item_id), by)
    return out


def consequence_of(reason: str | None, spec: ReviewSpec) -> str:
    """The consequence of a reason in words (``drop_item`` for an unknown one: nothing else happens)."""
    c = spec.consequence(reason)
    return c.describe(spec.media) if c is not None else "drops this item only"
