"""MAIA's reject reasons drop the unit they name (assets/recipes/maia/spec.py; docs/review.md): a
question that needs outside knowledge or has no implicit meaning drops its pool (the open-ended
item and its 8 pairs) and the clip's other questions stay; a fault of the clip (``bad_media``)
takes every question of it. Through the real gate."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from forge.benchmarks import registry
from forge.review import gate
from forge.review.items import revision
from forge.review.verdicts import VERDICT_COLUMNS
from forge.storage import TableStore
from tests.review import world
from tests.review.test_review_logic import _v


def _clip(tmp_path) -> pd.DataFrame:
    """Two questions of one clip (two pools of 2 pairs + the open item), a question of another clip."""
    store = TableStore(tmp_path)
    rows = [{**r, "unit_id": "clip_1"} for q in ("q1", "q2") for r in world.maia_pool(store, q, pairs=2)]
    rows += [{**r, "unit_id": "clip_2"} for r in world.maia_pool(store, "q3", pairs=2)]
    return world.write_gated(store, "maia", rows)


def _resolve(items: pd.DataFrame, reason: str, tmp_path) -> gate.Resolution:
    revs = {r["item_id"]: revision(r) for r in items.to_dict("records")}
    rows = [_v("q1_sv1", revs["q1_sv1"], "r", "reject", n=1, reason=reason)]
    rows += [_v(i, revs[i], "r", "accept", n=n) for n, i in enumerate(sorted(set(revs) - {"q1_sv1"}), 2)]
    spec = replace(registry.get("maia").review, splits=("test",), adjudicate_flags=())
    return gate.resolve(items, pd.DataFrame(rows, columns=VERDICT_COLUMNS), spec, tmp_path)


def _pools(res: gate.Resolution, status: str) -> set[str]:
    return {i.split("_")[0] for i, s in res.status.items() if s == status}


def test_a_question_needing_outside_knowledge_drops_its_pool_not_the_clip(tmp_path):
    res = _resolve(_clip(tmp_path), "needs_outside_knowledge", tmp_path)
    assert _pools(res, "rejected") == {"q1"} and _pools(res, "accepted") == {"q2", "q3"}
    assert {d.source for d in res.source_drops.values()} == {"q1"}


def test_a_fault_of_the_clip_drops_every_question_of_it(tmp_path):
    res = _resolve(_clip(tmp_path), "bad_media", tmp_path)
    assert _pools(res, "rejected") == {"q1", "q2"} and _pools(res, "accepted") == {"q3"}
