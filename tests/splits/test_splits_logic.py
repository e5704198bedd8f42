"""Leakage groups, the cross-split audit, stratification and split-size config (pure logic)."""

import pandas as pd
import pytest

from forge.benchmarks import registry
from forge.splits import assign as sa
from forge.splits import leakage as lk
from forge.splits.config import SplitSizes, benchmark_config
from forge.storage import TableStore
from tests.splits.helpers import make_world


@pytest.fixture
def store(tmp_path):
    return TableStore(tmp_path / "data")


def _links(store, items, **kw):
    return lk.build_links(
        items, store.read("frames"), store.read("duplicates"), store.read("frame_hashes"), store.data_dir, **kw
    )


def test_groups_by_source_channel_and_near_duplicate(store):
    items = make_world(
        store,
        [
            {"item_id": "a1", "category": "x", "source_item_id": "v1", "img": 1},
            {"item_id": "a2", "category": "x", "source_item_id": "v1", "img": 2},  # same video as a1
            {"item_id": "b1", "category": "y", "source_item_id": "v2", "img": 3, "channel": "chan"},
            {
                "item_id": "c1",
                "category": "y",
                "source_item_id": "v3",
                "img": 4,
                "channel": "chan",
            },  # same channel as b1
            {"item_id": "d1", "category": "x", "source_item_id": "v4", "img": 5},
            {"item_id": "e1", "category": "x", "source_item_id": "v5", "img": 5, "brighten": 6},  # near-dup of d1
            {"item_id": "f1", "category": "y", "source_item_id": "v6", "img": 7},  # alone
        ],
    )
    links = _links(store, items)
    g = lk.leakage_groups(items["item_id"], links)
    assert g["a1"] == g["a2"] == "g_a1"
    assert g["b1"] == g["c1"]
    assert g["d1"] == g["e1"]
    assert len({g["a1"], g["b1"], g["d1"], g["f1"]}) == 4
    # d1/e1 are linked through the trunk's duplicates group and through pHash both
    assert set(links.keys[links.keys["kind"] == "near_duplicate"]["item_id"]) >= {"d1", "e1"}
    assert len(links.phash_item_pairs()) == 1

    # Without the duplicates table, the pHash pairs alone still link them.
    links2 = lk.build_links(items, store.read("frames"), None, store.read("frame_hashes"), store.data_dir)
    assert lk.leakage_groups(items["item_id"], links2)["e1"] == "g_d1"

    # A hand-made split that separates every linked pair is caught, kind by kind.
    leaky = pd.DataFrame(
        {
            "item_id": ["a1", "a2", "b1", "c1", "d1", "e1", "f1"],
            "split": ["dev", "test", "dev", "test", "dev", "test", "test"],
        }
    )
    rep = lk.cross_split_pairs(leaky, links)
    assert rep.pairs["source_item_id"] == 1 and rep.pairs["channel"] == 1
    assert rep.pairs["near_duplicate"] == 1 and rep.pairs["phash"] == 1
    assert rep.near_duplicate_pairs == 2 and rep.total == 4 and rep.examples

    # The assignment itself never leaks.
    assigned = sa.assign_splits(items, g, SplitSizes.parse({"dev": 0.5, "test": "rest"}), seed=3)
    assert lk.cross_split_pairs(assigned, links).total == 0


def test_media_not_in_frames_is_hashed_from_the_file(store):
    items = make_world(
        store,
        [
            {"item_id": "a", "category": "x", "source_item_id": "v1", "img": 11},
            {"item_id": "b", "category": "x", "source_item_id": "v2", "img": 11, "brighten": 4},
        ],
        with_dedup=False,
    )
    links = lk.build_links(items, None, None, None, store.data_dir)  # no trunk tables at all
    assert lk.leakage_groups(items["item_id"], links)["b"] == "g_a"


def _synthetic(n_groups=120, seed=0):
    import random

    rnd = random.Random(seed)
    rows = []
    cats = ["irony"] * 5 + ["metaphor"] * 3 + ["humour"] * 2  # skewed: 50 / 30 / 20 %
    for g in range(n_groups):
        for k in range(rnd.choice([1, 1, 2, 3])):
            rows.append({"item_id": f"i{g:03d}_{k}", "category": rnd.choice(cats), "group": f"g{g:03d}"})
    df = pd.DataFrame(rows)
    return df, pd.Series(dict(zip(df["item_id"], df["group"])))


def test_stratified_and_deterministic():
    items, groups = _synthetic()
    sizes = SplitSizes.parse({"train": 0.6, "validation": 0.2, "test": "rest"})
    a = sa.assign_splits(items, groups, sizes, seed=1)
    b = sa.assign_splits(items.sample(frac=1, random_state=5), groups, sizes, seed=1)
    assert a.equals(b)  # input order does not matter
    c = sa.assign_splits(items, groups, sizes, seed=2)
    assert not a["split"].equals(c["split"])  # the seed does
    counts = a["split"].value_counts()
    n = len(items)
    assert abs(counts["train"] - 0.6 * n) <= 3 and abs(counts["validation"] - 0.2 * n) <= 3
    assert sa.stratification_error(a, items) < 0.05
    # groups intact
    assert a.groupby("group_id")["split"].nunique().max() == 1


def test_stratification_beats_random_group_assignment():
    items, groups = _synthetic(seed=4)
    sizes = SplitSizes.parse({"dev": 0.3, "test": "rest"})
    ours = sa.stratification_error(sa.assign_splits(items, groups, sizes, seed=0), items)
    import random

    rnd = random.Random(0)
    worst_random = []
    for _ in range(10):
        gs = {g: ("dev" if rnd.random() < 0.3 else "test") for g in groups.unique()}
        rand = pd.DataFrame({"item_id": items["item_id"], "split": items["item_id"].map(groups).map(gs)})
        worst_random.append(sa.stratification_error(rand, items))
    assert ours < sorted(worst_random)[len(worst_random) // 2]


def test_fixed_sizes_iibench_from_recipe_config():
    cfg = benchmark_config(registry.get("iibench"))
    sizes = SplitSizes.parse(cfg["sizes"])
    assert sizes.names == ["dev", "validation", "test"]
    items = pd.DataFrame({"item_id": [f"q{i:03d}" for i in range(100)], "category": ["a", "b"] * 50})
    groups = pd.Series({i: f"g_{i}" for i in items["item_id"]})
    counts = sa.assign_splits(items, groups, sizes, seed=0)["split"].value_counts()
    assert (counts["dev"], counts["validation"], counts["test"]) == (15, 20, 65)
    assert sizes.targets(20) == pytest.approx({"dev": 20 * 15 / 35, "validation": 20 * 20 / 35, "test": 0.0})
    # the configured floor keeps a test split on a small corpus, and does not bind at paper scale
    floor = SplitSizes.from_config(cfg)
    assert floor.min_rest_share == 0.5
    assert floor.targets(10) == pytest.approx({"dev": 5 * 15 / 35, "validation": 5 * 20 / 35, "test": 5.0})
    assert floor.targets(1434) == pytest.approx({"dev": 15.0, "validation": 20.0, "test": 1399.0})


def test_bad_sizes_rejected():
    with pytest.raises(ValueError):
        SplitSizes.parse({"a": "rest", "b": "rest"})
    with pytest.raises(ValueError):
        SplitSizes.parse({"a": "half"})


def test_phash_links_are_a_spanning_set_that_still_catches_every_leak():
    # 3 images, each shown by 40 items (the questions of one clip), two of the images near-duplicates.
    rows = [
        {"item_id": f"q{k}_{n:02d}", "phash_int": h}
        for k, h in enumerate([0b0, 0b11, 1 << 40 | 0xFFFF0000])
        for n in range(40)
    ]
    links = lk.ItemLinks(
        keys=pd.DataFrame(columns=["item_id", "kind", "key"]), hashes=pd.DataFrame(rows), phash_threshold=8
    )
    pairs = links.phash_item_pairs()
    assert len(pairs) < 3 * 40  # linear, not the 7,000+ all-pairs of the same components
    ids = pd.Series([r["item_id"] for r in rows])
    g = lk.leakage_groups(ids, links)
    assert g["q0_00"] == g["q0_39"] == g["q1_17"]  # same image, and near images, are one group
    assert g["q2_00"] != g["q0_00"]  # the far image is its own group
    # moving any single item of a linked component to another split is caught
    for moved in ("q0_39", "q1_00", "q1_39"):
        split = pd.DataFrame({"item_id": ids, "split": ["test"] * len(ids)})
        split.loc[split["item_id"] == moved, "split"] = "dev"
        assert lk.cross_split_pairs(split, links).pairs["phash"] >= 1, moved
    clean = pd.DataFrame({"item_id": ids, "split": ["dev" if i.startswith("q2") else "test" for i in ids]})
    assert lk.cross_split_pairs(clean, links).pairs["phash"] == 0
