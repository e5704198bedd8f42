""" "Regenerate rejected": the generating stage asks again, through the LLM cache, for the items
reviewers rejected (docs/review.md), Dagster-free.

A benchmark opts in with ``ReviewSpec.regenerate`` (the generating asset, and the item column
that equals that stage's ``LLMRequest.item_id``). The stage calls ``attempts`` once and
``bump`` on its requests: a request whose items were rejected gets ``params.seed`` moved by n, n =
the number of rejected item revisions recorded for it. The seed is part of the cache key, so that
request is sent again (a new reply, a new revision, a new review task; the old verdicts stay in
``verdicts``, stale ``item_changed``), while every other request is the cached one and costs
nothing. n only grows with new rejections (stale verdicts keep counting), so re-running the stage
replays the regenerated reply from the cache instead of reverting to the rejected one.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

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
    keys = _keys(items, rs.regenerate.key)
    if verdicts.empty or keys is None:
        return {}
    key_of = {i: k for i, k in zip(items["item_id"].astype(str), keys, strict=True) if k is not None}
    out: dict[str, int] = {}
    for item_id, _rev in rejected_revisions(verdicts, rs.reviewers):
        if item_id in key_of:
            out[key_of[item_id]] = out.get(key_of[item_id], 0) + 1
    return out


def _keys(items: pd.DataFrame, key: str) -> list[str | None] | None:
    """The regeneration key of each item: a column, or ``labels.<field>`` (a field of the labels JSON,
    e.g. MAIA's pool = ``labels.question_id``); None when the items do not have it."""
    if items.empty:
        return None
    if key in items:
        return items[key].astype(str).tolist()
    field = key.removeprefix("labels.")
    if field == key or "labels" not in items:
        return None
    out = [json.loads(v).get(field) if isinstance(v, str) and v else None for v in items["labels"]]
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
