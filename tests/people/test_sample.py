"""The people loop's one seeded sample (forge/people/sample.py): a protocol step's share or count,
the blind baseline's subset and the judge validation's answers all draw through it."""

from __future__ import annotations

import pytest

from forge.benchmarks.protocol_spec import StepSample
from forge.people.sample import draw, pick, subset
from forge.protocol import steps

IDS = [f"x{k}" for k in range(20)]


def test_the_draws_are_the_ones_every_earlier_sample_made():
    # pinned: a change to the hash, the seed's place or the ordering would move every sample people saw
    assert draw("protocol", "u1") == pytest.approx(0.8486561747731649, abs=1e-15)
    assert sorted(pick(IDS, "s", count=5)) == ["x13", "x17", "x19", "x6", "x7"]
    assert sorted(pick(IDS, "s", share=0.25)) == ["x13", "x17", "x19", "x6", "x7"]
    assert subset(IDS, 4, 0) == ["x10", "x16", "x3", "x8"]
    assert steps.sampled(IDS, StepSample(count=5, seed="s")) == pick(IDS, "s", count=5)  # the step's adaptor


def test_a_share_keeps_membership_and_a_count_nests():
    units = [f"u{i}" for i in range(200)]
    half = pick(units, "s", share=0.5)
    assert 70 < len(half) < 130 and half == pick(list(reversed(units)), "s", share=0.5)
    assert half <= pick(units + ["new"], "s", share=0.5)  # a unit's membership never changes when others arrive
    assert pick(units, "s", count=10) <= pick(units, "s", count=40) and len(pick(units, "s", count=40)) == 40
    assert pick(units, "s") == set(units) and pick(units, "t", count=40) != pick(units, "s", count=40)
    for bad in ({"share": 0.0}, {"share": 1.5}, {"count": 0}, {"share": 0.5, "count": 3}):
        with pytest.raises(ValueError):
            pick(units, "s", **bad)


def test_the_subset_is_seeded_stable_and_nested():
    ids = [f"x{k}" for k in range(1000)]
    a, b = subset(ids, 400, 0), subset(reversed(ids), 400, 0)
    assert a == b and len(a) == 400  # the order items come in does not matter
    assert set(subset(ids, 100, 0)) <= set(a)  # a larger subset keeps a smaller one
    assert subset(ids, 400, 1) != a and subset(ids, 400, "0") == a  # the seed as the config writes it
    assert subset(ids[:10], 400, 0) == sorted(ids[:10])  # the paper's size above the items: all
    with pytest.raises(ValueError, match="at least 1"):
        subset(ids, 0)
