"""forge.checks.mcq on hand-computed cases."""

import pytest

from forge.checks import mcq


def test_shuffle_is_seeded_and_keeps_types():
    opts = ["right", "fake scene", "literal", "missing thing"]
    types = ["correct", "FS", "SU", "NE"]
    a = mcq.shuffle_options(opts, types, seed="item-1")
    b = mcq.shuffle_options(opts, types, seed="item-1")
    assert a == b
    assert sorted(zip(a.options, a.option_types)) == sorted(zip(opts, types))  # pairs stay together
    assert a.options[a.correct_index] == "right" and a.option_types[a.correct_index] == "correct"
    assert a.answer == "ABCD"[a.correct_index]
    # Different seeds give different orders for at least some items.
    orders = {tuple(mcq.shuffle_options(opts, types, seed=f"item-{i}").options) for i in range(30)}
    assert len(orders) > 5


def test_shuffle_correct_position_forced():
    s = mcq.shuffle_options(["x", "y", "z"], ["FS", "correct", "SU"], seed=1, correct_position=2)
    assert s.correct_index == 2 and s.options[2] == "y" and s.answer == "C"
    with pytest.raises(ValueError):
        mcq.shuffle_options(["x"], ["FS"], seed=1)
    with pytest.raises(ValueError):
        mcq.shuffle_options(["x", "y"], ["correct"], seed=1)


def test_balanced_positions_counts_differ_by_at_most_one():
    plan = mcq.balanced_positions([f"i{k}" for k in range(10)], 4, seed="s")
    counts = [list(plan.values()).count(p) for p in range(4)]
    assert sorted(counts) == [2, 2, 3, 3]
    assert plan == mcq.balanced_positions([f"i{k}" for k in reversed(range(10))], 4, seed="s")


def test_position_balance_hand_computed():
    # 8 items, 4 options: A×4, B×2, C×2, D×0 → shares .5 .25 .25 0; max deviation |.5-.25| = .25
    pb = mcq.position_balance(["A", "A", "A", "A", "B", "B", "c", 2], 4)
    assert pb.n == 8
    assert pb.counts == {"A": 4, "B": 2, "C": 2, "D": 0}
    assert pb.max_deviation == pytest.approx(0.25)
    # chi2 = sum((o-e)^2/e), e = 2: (4+0+0+4)/2 = 4
    assert pb.chi2 == pytest.approx(4.0)
    uniform = mcq.position_balance(["A", "B", "C", "D"], 4)
    assert uniform.max_deviation == 0 and uniform.p_value == pytest.approx(1.0)
    assert mcq.position_balance([], 4).n == 0
    with pytest.raises(ValueError):
        mcq.position_balance(["E"], 4)


def test_length_bias_hand_computed():
    items = [
        (["a long correct option", "b", "c", "d"], 0),  # correct strictly longest
        (["aa", "bbbb", "cc", "dd"], 0),  # correct tied-shortest → neither
        (["same", "same", "x", "y"], 1),  # tie for longest → not counted
        (["x", "yy"], 0),  # strictly shortest, 2 options
    ]
    lb = mcq.length_bias(items)
    assert lb.n == 4 and lb.correct_longest == 1 and lb.share_longest == 0.25
    assert lb.correct_shortest == 1
    assert lb.chance == pytest.approx((0.25 * 3 + 0.5) / 4)
    assert lb.excess == pytest.approx(0.25 - lb.chance)


def test_duplicate_options_exact_and_near():
    opts = ["Pick up the cup.", "pick up the  CUP", "Open the window", "Open the windows"]
    pairs = mcq.duplicate_options(opts, threshold=0.9)
    assert [(p.i, p.j, p.exact) for p in pairs] == [(0, 1, True), (2, 3, False)]
    assert pairs[0].similarity == 1.0
    # "open the window" vs "open the windows": ratio = 2*15/(15+16) = 0.9677
    assert pairs[1].similarity == pytest.approx(30 / 31, abs=1e-4)
    assert mcq.duplicate_options(["Turn off the lamp", "Close the door"]) == []
    st = mcq.duplicate_stats([("a", opts), ("b", ["x", "y"])])
    assert st.n == 2 and st.items_with_duplicates == 1 and st.items_with_exact == 1 and st.rate == 0.5
    assert st.examples[0]["item_id"] == "a"


def test_letter_index():
    assert mcq.letter_index(" c) ") == 2
    with pytest.raises(ValueError):
        mcq.letter_index("AB")
