"""Hummus' reject reasons drop the unit they name (assets/recipes/hummus/spec.py; docs/review.md):
``no_implicit_meaning`` / ``needs_outside_knowledge`` are about one caption of a cartoon (§4.1:
a pair is discarded), so they drop that pair's items and the cartoon's other captions stay; a
fault of the cartoon itself (``bad_media``) takes every pair of it. Through the real gate."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd

from forge.benchmarks import registry
from forge.review import gate
from forge.review.consequences import consequence_of
from forge.review.items import revision
from forge.review.verdicts import VERDICT_COLUMNS
from forge.storage import TableStore
from tests.review import world
from tests.review.test_review_logic import _v


def _cartoon(tmp_path) -> pd.DataFrame:
    """One cartoon with two captions (pairs hma_1, hma_2: two items each), and another cartoon."""
    store = TableStore(tmp_path)
    media = world.image(store.data_dir, "cartoon", (200, 180, 20))
    rows = []
    for pair, cartoon, items in (
        ("hma_1", "fr_c", ("a1", "a2")),
        ("hma_2", "fr_c", ("b1", "b2")),
        ("hma_3", "fr_d", ("d1",)),
    ):
        for i in items:
            rows.append(
                {
                    **world.hummus_box(i, media, [0.1, 0.2, 0.3, 0.4], "chains"),
                    "unit_id": cartoon,
                    "extra": json.dumps({"annotation_id": pair, "profile": "paper"}),
                }
            )
    return world.write_gated(store, "hummus", rows)


def _resolve(items: pd.DataFrame, reason: str, tmp_path) -> gate.Resolution:
    revs = {r["item_id"]: revision(r) for r in items.to_dict("records")}
    rows = [_v("a1", revs["a1"], "linguist", "reject", n=1, reason=reason)]
    rows += [_v(i, revs[i], "linguist", "accept", n=n) for n, i in enumerate(("a2", "b1", "b2", "d1"), 2)]
    verdicts = pd.DataFrame(rows, columns=VERDICT_COLUMNS).assign(benchmark="hummus")
    spec = replace(registry.get("hummus").review, splits=("test",))
    return gate.resolve(items, verdicts, spec, tmp_path)


def test_a_reason_about_the_caption_drops_its_pair_and_keeps_the_cartoons_other_captions(tmp_path):
    items = _cartoon(tmp_path)
    res = _resolve(items, "needs_outside_knowledge", tmp_path)
    assert {i for i, s in res.status.items() if s == "rejected"} == {"a1", "a2"}  # the pair hma_1 only
    assert {res.status[i] for i in ("b1", "b2", "d1")} == {"accepted"}  # the cartoon's other caption stays
    assert {d.source for d in res.source_drops.values()} == {"hma_1"}
    assert "drops the pair" in consequence_of("no_implicit_meaning", registry.get("hummus").review)


def test_a_fault_of_the_cartoon_drops_every_pair_of_it(tmp_path):
    items = _cartoon(tmp_path)
    res = _resolve(items, "bad_media", tmp_path)
    assert {i for i, s in res.status.items() if s == "rejected"} == {"a1", "a2", "b1", "b2"}
    assert res.status["d1"] == "accepted"  # another cartoon
