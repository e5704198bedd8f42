""" "Regenerate rejected": the generating stage asks again, through the LLM cache, for the items
reviewers rejected (docs/review.md), Dagster-free.

A benchmark opts in with ``ReviewSpec.regenerate`` (the generating asset, and the item column
that equals that stage's ``LLMRequest.item_id``). The stage calls ``attempts`` once and
``bump`` on its requests: a request whose items were rejected gets ``params.seed = n``, n = the
number of rejected item revisions recorded for it. The seed is part of the cache key, so that
request is sent again (a new reply, a new revision, a new review task; the old verdicts stay in
``verdicts``, stale ``item_changed``), while every other request is the cached one and costs
nothing. n only grows with new rejections (stale verdicts keep counting), so re-running the stage
replays the regenerated reply from the cache instead of reverting to the rejected one.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from forge.benchmarks.spec import BenchmarkSpec
from forge.llm.types import LLMRequest
from forge.review import gate
from forge.review.stages import gated_items, read, settings
from forge.storage import TableStore

SEED_PARAM = "seed"  # an OpenAI chat-completions parameter; part of the engine's cache key


def rejected_revisions(verdicts: pd.DataFrame, reviewers: int) -> set[tuple[str, str]]:
    """(item, revision) pairs reviewers rejected, current or stale (a deleted task's verdicts excluded)."""
    if verdicts.empty:
        return set()
    out = set()
    for item_id, g in verdicts.groupby("item_id"):
        for rev in g["revision"].dropna().astype(str).unique():
            if gate.item_status(g, rev, reviewers)[0] == "rejected":
                out.add((str(item_id), rev))
    return out


def attempts(store: TableStore, spec: BenchmarkSpec) -> dict[str, int]:
    """Generating request id -> its regeneration attempt (rejected revisions of its items); {} when
    the benchmark declares no regeneration or nothing was rejected."""
    rs = settings(spec)
    if rs.regenerate is None:
        return {}
    verdicts, items = read(store, "verdicts", spec.name), gated_items(store, spec.name)
    if verdicts.empty or items.empty or rs.regenerate.key not in items:
        return {}
    key_of = dict(zip(items["item_id"].astype(str), items[rs.regenerate.key].astype(str), strict=True))
    out: dict[str, int] = {}
    for item_id, _rev in rejected_revisions(verdicts, rs.reviewers):
        if item_id in key_of:
            out[key_of[item_id]] = out.get(key_of[item_id], 0) + 1
    return out


def bump(requests: list[LLMRequest], tries: dict[str, int]) -> list[LLMRequest]:
    """The requests with ``seed`` = their attempt where they have one (others are untouched)."""
    return [
        dataclasses.replace(r, params={**r.params, SEED_PARAM: int(tries[r.item_id])}) if r.item_id in tries else r
        for r in requests
    ]
