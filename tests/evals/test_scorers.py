import math

import numpy as np
import pytest

from forge.evals.bootstrap import cluster_bootstrap
from forge.evals.scorers import (
    all_correct,
    box_iou,
    chosen_option_type,
    cooccurrence,
    error_composition,
    f1_per_class,
    frobenius,
    option_affinity,
    rotations,
    rouge_l,
    rouge_n,
    span_overlap,
    weighted_mean,
)


def test_error_composition():
    assert error_composition(["A", "C"], ["C", "A"]) == "exact"
    assert error_composition(["A"], ["A", "C"]) == "miss_only"
    assert error_composition(["A", "B", "C"], ["A", "C"]) == "extra_only"
    assert error_composition(["A", "B"], ["A", "C"]) == "mixed"
    assert error_composition([], ["A"]) == "miss_only"


def test_affinity_and_cooccurrence():
    preds, golds = [["A"], ["A", "B"]], [["B"], ["A", "B"]]
    aff = option_affinity(preds, golds, ["A", "B", "C"])
    assert aff == {"A": 0.5, "B": -0.5, "C": 0.0}
    m = cooccurrence([["A", "B"], ["A"]], ["A", "B"])
    assert m.tolist() == [[1.0, 0.5], [0.5, 0.5]]
    assert frobenius(m, m) == 0.0


def test_vague_option_type_and_rotations():
    assert chosen_option_type("C", ["correct", "FS", "NE", "SU"]) == "NE"
    assert chosen_option_type(None, ["correct"]) is None
    rot = rotations(["x", "y", "z"], "B")
    assert rot == [(["x", "y", "z"], "B"), (["y", "z", "x"], "A"), (["z", "x", "y"], "C")]
    for opts, ans in rot:
        assert opts[ord(ans) - 65] == "y"
    assert all_correct([True, True]) is True
    assert all_correct([True, False, None]) is False
    assert all_correct([True, None]) is None


def test_f1_per_class_hand_computed():
    pred = ["pos", "pos", "neg", None]
    gold = ["pos", "neg", "neg", "pos"]
    f = f1_per_class(pred, gold, ["pos", "neg"])
    # pos: tp=1 fp=1 fn=1 → 2/4; neg: tp=1 fp=0 fn=1 → 2/3
    assert f["pos"] == pytest.approx(0.5) and f["neg"] == pytest.approx(2 / 3)
    assert f["avg"] == pytest.approx((0.5 + 2 / 3) / 2)
    assert f1_per_class(["neg"], ["pos"], ["pos", "neg"])["pos"] == 0.0


def test_box_iou_precision_recall():
    same = box_iou([0.1, 0.1, 0.5, 0.5], [0.1, 0.1, 0.5, 0.5])
    assert same == {"iou": 1.0, "precision": 1.0, "recall": 1.0}
    # pred covers the left half of gold: inter 0.25*0.5... gold 0.5x0.5, pred 0.5 tall x 0.25 wide
    half = box_iou([0.0, 0.0, 0.5, 0.25], [0.0, 0.0, 0.5, 0.5])
    assert half["iou"] == pytest.approx(0.5) and half["precision"] == 1.0 and half["recall"] == pytest.approx(0.5)
    assert box_iou([0, 0, 0.1, 0.1], [0.5, 0.5, 0.1, 0.1])["iou"] == 0.0


def test_span_overlap_and_rouge():
    o = span_overlap(["my boss"], ["boss", "shark"])
    assert o["jaccard"] == pytest.approx(1 / 3) and o["precision"] == 0.5 and o["recall"] == 0.5
    assert span_overlap([], ["x"])["jaccard"] == 0.0
    assert rouge_n("the cat sat", "the cat sat", 1) == 1.0
    assert rouge_n("the cat sat", "the dog sat", 2) == 0.0
    assert rouge_n("the cat sat", "the dog sat", 1) == pytest.approx(2 / 3)
    assert rouge_l("to catch the bus", ["he was hungry", "to catch the bus"]) == 1.0


def test_weighted_mean_ignores_unscored():
    assert weighted_mean(np.array([1.0, np.nan, 0.0])) == 0.5
    assert math.isnan(weighted_mean(np.array([np.nan])))
    assert weighted_mean(np.array([1.0, 0.0]), np.array([3.0, 1.0])) == 0.75


def test_cluster_bootstrap_resamples_clusters():
    # Two clusters, each perfectly correlated inside: any resample gives 0, 0.5 or 1 — never
    # the in-between values a row-level bootstrap of 10 independent rows would produce.
    v = np.array([1.0] * 5 + [0.0] * 5)
    clusters = ["a"] * 5 + ["b"] * 5
    seen = {round(weighted_mean(v, w), 6) for w in _draws(clusters)}
    assert seen <= {0.0, 0.5, 1.0}
    lo, hi = cluster_bootstrap(lambda w: weighted_mean(v, w), clusters, n_boot=200, seed=1)
    assert lo == 0.0 and hi == 1.0
    # Many independent clusters: a narrow interval around the mean.
    rng = np.random.default_rng(0)
    v2 = (rng.random(400) < 0.7).astype(float)
    lo2, hi2 = cluster_bootstrap(lambda w: weighted_mean(v2, w), list(range(400)), n_boot=300)
    assert lo2 < v2.mean() < hi2 and hi2 - lo2 < 0.15
    assert all(math.isnan(x) for x in cluster_bootstrap(lambda w: 1.0, ["one"] * 3))


def _draws(clusters, n=50):
    from forge.evals.bootstrap import cluster_ids

    idx = cluster_ids(clusters)
    k = idx.max() + 1
    rng = np.random.default_rng(0)
    for c in rng.multinomial(k, [1 / k] * k, size=n):
        yield c[idx].astype(float)
