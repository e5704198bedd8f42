""" "Regenerate rejected": the generating stage asks again, through the LLM cache, for the items
reviewers rejected (docs/review.md), Dagster-free.

A reject reason sends its item back to a stage when its consequence says so
(``ReviewSpec.consequences``: ``regenerate``, the stage that made the faulted field, and the item
column that equals that stage's ``LLMRequest.item_id``). The stage calls ``attempts`` once with its
own name and ``bump`` on its requests: a request whose items were rejected for such a reason gets
``params.seed`` moved by n, n = the number of those rejected item revisions recorded for it. The seed is part of the cache key, so that
request is sent again (a new reply, a new revision, a new review task; the old verdicts stay in
``verdicts``, stale ``item_changed``), while every other request is the cached one and costs
nothing. n only grows with new rejections (stale verdicts keep counting), so re-running the stage
replays the regenerated reply from the cache instead of reverting to the rejected one.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import pandas as pd

from forge.benchmarks.review_spec import ReviewSpec
from forge.benchmarks.spec import BenchmarkSpec
from forge.llm.types import LLMRequest
from forge.review import gate
from forge.review.stages import gated_items, read, resolution
from forge.review.verdicts import edit_of
from forge.storage import TableStore

SEED_PARAM = "seed"  # an OpenAI chat-completions parameter; part of the engine's cache key


def rejected_revisions(verdicts: pd.DataFrame, reviewers: int) -> dict[tuple[str, str], str]:
    """(item, revision) pairs reviewers rejected, current or stale (a deleted task's verdicts
    excluded) -> the reviewers' reason."""
    if verdicts.empty:
        return {}
    out = {}
    for item_id, g in verdicts.groupby("item_id"):
        for rev in g["revision"].dropna().astype(str).unique():
            status, why = gate.item_status(g, rev, reviewers)
            if status == "rejected":
                out[(str(item_id), rev)] = why or "other"
    return out


def regenerations(store: TableStore, spec: BenchmarkSpec, rs: ReviewSpec, stage: str) -> dict[str, Counter[str]]:
    """Generating request id of ``stage`` -> its items' rejected revisions whose reason's consequence
    regenerates ``stage`` (``ReviewSpec.consequences`` of ``rs``, the review settings in effect),
    per item; {} when none does."""
    if not any(stage in c.stages() for c in rs.consequences_in_effect().values()):
        return {}
    verdicts, items = read(store, "verdicts", spec.name), gated_items(store, spec.name)
    if verdicts.empty or items.empty:
        return {}
    ids = items["item_id"].astype(str).tolist()
    category = dict(zip(ids, items["category"].astype(str), strict=True)) if "category" in items else {}
    key_of: dict[str, dict[str, str | None]] = {}  # consequence key -> item -> request id
    out: dict[str, Counter[str]] = {}
    for (item_id, _rev), reason in sorted(rejected_revisions(verdicts, rs.reviewers).items()):
        c = rs.consequence(reason)
        if c is None or item_id not in category or c.stage_for(category[item_id]) != stage:
            continue
        if c.key not in key_of:
            keys = _keys(items, c.key)
            key_of[c.key] = dict(zip(ids, keys, strict=True)) if keys is not None else {}
        k = key_of[c.key].get(item_id)
        if k is not None:
            out.setdefault(k, Counter())[item_id] += 1
    return out


def attempts(store: TableStore, spec: BenchmarkSpec, rs: ReviewSpec, stage: str) -> dict[str, int]:
    """Generating request id of ``stage`` -> its regeneration attempt (rejected revisions of its
    items whose reason sends them back to ``stage``); {} when nothing was."""
    return {k: sum(c.values()) for k, c in regenerations(store, spec, rs, stage).items()}


def reviewed(store: TableStore, spec: BenchmarkSpec, rs: ReviewSpec) -> pd.DataFrame:
    """The gated items at their current revision (reviewers' edits applied) with their
    ``review_status``: what people decided, for a stage that keeps it when it writes again
    (Hummus' verdict); empty before anything was gated."""
    items = gated_items(store, spec.name)
    return resolution(store, spec, rs, items).items if len(items) else items


def _keys(items: pd.DataFrame, key: str) -> list[str | None] | None:
    """The regeneration key of each item: a column, or ``labels.<field>`` / ``extra.<field>`` (a field
    of that JSON column, e.g. MAIA's pool = ``labels.question_id``, its pair = ``extra.statement_id``);
    None when the items do not have it (an item without the field is not regenerated)."""
    if items.empty:
        return None
    if key in items:
        return items[key].astype(str).tolist()
    where, _, field = key.partition(".")
    if where not in ("labels", "extra") or not field or where not in items:
        return None
    out = [json.loads(v).get(field) if isinstance(v, str) and v else None for v in items[where]]
    return [None if v is None else str(v) for v in out]


def bump(
    requests: list[LLMRequest],
    tries: dict[str, int],
    key: Callable[[LLMRequest], str] = lambda r: r.item_id,
    stride: int = 1,
) -> list[LLMRequest]:
    """The requests with ``seed`` = their own seed (0 when none) + ``stride`` × their attempt where
    they have one (others are untouched). ``key`` maps a request to its regeneration key (MAIA: the
    pool of an annotator request); ``stride`` keeps the seeds a stage already draws itself (MAIA's
    fresh draws, seed + pool size × draw) out of the regenerated ones."""
    out = []
    for r in requests:
        n = tries.get(key(r))
        seed = int((r.params or {}).get(SEED_PARAM, 0)) + stride * int(n) if n else None
        out.append(r if seed is None else dataclasses.replace(r, params={**(r.params or {}), SEED_PARAM: seed}))
    return out


def applied_edits(
    store: TableStore, spec: BenchmarkSpec, rs: ReviewSpec
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(item at its current revision, the edit) of every live edit the gate applied, oldest first:
    what a stage reads to rebuild what it made from a corrected field (MAIA: a corrected answer's
    statement and foil, ``assets/recipes/maia/logic/corrections.py``); [] before anything was gated."""
    items = gated_items(store, spec.name)
    if items.empty:
        return []
    edits = read(store, "verdicts", spec.name)
    if not len(edits) or not (edits["verdict"] == "edit").any():  # no edit: no gate run needed to say so
        return []
    res = resolution(store, spec, rs, items)
    v = res.verdicts
    live = v[(v["verdict"] == "edit") & (v["edit_status"] == "applied") & ~v["stale"].astype(bool)]
    by_id = {str(r["item_id"]): r for r in res.items.to_dict("records")}
    out = []
    for row in live.sort_values(["created_at", "verdict_id"], kind="stable").to_dict("records"):
        item = by_id.get(str(row["item_id"]))
        if item is not None:
            out.append((item, edit_of(row)))
    return out
