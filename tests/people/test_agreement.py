"""The one agreement module (forge/people/agreement.py): each measure against a hand computation
and against the library it wraps, on the one input shape (long rows unit, person, value)."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa

from forge.people import agreement as ag
from forge.review.gate import verdict_agreement

# Fleiss (1971)'s worked layout as Wikipedia's "Fleiss' kappa" article gives it: 10 subjects, 14 raters,
# 5 categories; counts per category. Published: P = 0.378, Pe = 0.213, kappa = 0.210.
WIKI = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def rows(triples: list[tuple[str, str, object]]) -> pd.DataFrame:
    return pd.DataFrame(triples, columns=ag.COLUMNS)


def from_counts(counts: list[list[int]]) -> pd.DataFrame:
    """Long rows of a subjects × categories count table: rater k of a subject gives its k-th value."""
    out = []
    for s, row in enumerate(counts):
        values = [c for c, n in enumerate(row) for _ in range(n)]
        out += [(f"s{s}", f"r{k}", f"cat{v}") for k, v in enumerate(values)]
    return rows(out)


def test_fleiss_matches_the_published_example_and_statsmodels():
    f = ag.fleiss(from_counts(WIKI))
    assert (f.units, f.most_people) == (10, 14)
    assert f.observed == pytest.approx(0.378, abs=5e-4) and f.chance == pytest.approx(0.213, abs=5e-4)
    assert f.kappa == pytest.approx(0.210, abs=5e-4)
    assert f.kappa == round(fleiss_kappa(np.array(WIKI), "fleiss"), 4)


def test_fleiss_with_unequal_people_uses_each_units_own_count():
    # u1: x x x (agreement 1); u2: x y (0); u3: y y y x ((9 + 1 - 4) / 12 = 0.5); answers x 5, y 4 of 9
    r = rows([("u1", "a", "x"), ("u1", "b", "x"), ("u1", "c", "x"), ("u2", "a", "x"), ("u2", "b", "y")])
    r = pd.concat([r, rows([("u3", "a", "y"), ("u3", "b", "y"), ("u3", "c", "y"), ("u3", "d", "x")])])
    f = ag.fleiss(r)
    chance = (5 / 9) ** 2 + (4 / 9) ** 2
    assert (f.units, f.most_people, f.observed) == (3, 4, 0.5)
    assert f.chance == round(chance, 4) and f.kappa == round((0.5 - chance) / (1 - chance), 4) == -0.0125
    with pytest.raises(AssertionError):  # statsmodels refuses unequal counts: why the module says the rule
        fleiss_kappa(np.array([[3, 0], [1, 1], [1, 3]]))


def test_fleiss_counts_each_persons_last_answer_and_units_two_answered():
    base = rows([("u1", "a", "x"), ("u1", "b", "x"), ("u2", "a", "x"), ("u2", "b", "y")])
    extra = rows([("u1", "a", "y"), ("u1", "a", "x"), ("u3", "a", "y"), ("u4", "c", None), ("u4", "d", "y")])
    assert ag.fleiss(pd.concat([base, extra])) == ag.fleiss(base)  # a's last answer on u1 is x again
    assert ag.fleiss(rows([("u1", "a", "x"), ("u2", "b", "y")])) == ag.Fleiss(None, 0, 0, None, None)
    same = ag.fleiss(rows([("u1", "a", "x"), ("u1", "b", "x"), ("u2", "a", "x"), ("u2", "b", "x")]))
    assert same.kappa is None and same.observed == same.chance == 1.0  # total agreement, kappa undefined


def test_alpha_by_hand_and_by_krippendorff():
    # coders a, b; u1 (1, 1), u2 (0, 0), u3 (1, 0); u4 only a (not pairable). Coincidences: n = 6,
    # n_1 = n_0 = 3; D_o = 2/6, D_e = 2 * 3 * 3 / (6 * 5) = 0.6; alpha = 1 - D_o / D_e = 4/9
    r = rows([("u1", "a", 1), ("u1", "b", 1), ("u2", "a", 0), ("u2", "b", 0), ("u3", "a", 1), ("u3", "b", 0)])
    r = pd.concat([r, rows([("u4", "a", 1)])])
    a = ag.alpha(r)
    lib = krippendorff.alpha(reliability_data=np.array([[1, 0, 1], [1, 0, 0]]), level_of_measurement="nominal")
    assert a == ag.Alpha(round(4 / 9, 4), 3, 2) and a.alpha == round(lib, 4)
    texts = ag.alpha(r.assign(value=r["value"].map({1: "keep", 0: "drop"})))  # nominal: any coding
    assert texts.alpha == a.alpha
    assert ag.alpha(r[r["unit"] == "u1"]).note == "fewer than two units answered by two or more people"
    assert ag.alpha(rows([("u1", "a", 1), ("u1", "b", 1), ("u2", "a", 1), ("u2", "b", 1)])).note.startswith("undefined")


def test_alpha_handles_people_who_did_not_see_every_unit():
    data = np.array([[1, 1, 0, np.nan, 1], [1, np.nan, 0, 1, 0], [np.nan, 1, 0, 1, 1]])
    r = rows([(f"u{j}", f"p{i}", data[i, j]) for i in range(3) for j in range(5) if not np.isnan(data[i, j])])
    lib = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert ag.alpha(r).alpha == round(lib, 4) and ag.alpha(r).units == 5


def test_cohen_by_hand_and_by_scikit_learn():
    a, b = ["x", "x", "y", "y", "x"], ["x", "y", "y", "y", "x"]
    r = rows([(f"u{k}", "a", v) for k, v in enumerate(a)] + [(f"u{k}", "b", v) for k, v in enumerate(b)])
    r = pd.concat([r, rows([("u9", "a", "x")])])  # only a: not a shared unit
    po, pe = 0.8, 3 / 5 * 2 / 5 + 2 / 5 * 3 / 5
    c = ag.cohen(r, "a", "b", ["x", "y"])
    assert c == ag.Cohen(round((po - pe) / (1 - pe), 4), 5) and c.kappa == round(cohen_kappa_score(a, b), 4)
    assert ag.cohen(r, "a", "nobody") == ag.Cohen(None, 0)
    one = rows([("u1", "a", "x"), ("u1", "b", "x"), ("u2", "a", "x"), ("u2", "b", "x")])
    assert ag.cohen(one, "a", "b", ["x", "y"]) == ag.Cohen(None, 2)  # one label throughout: undefined


def test_long_rows_names_missing_columns():
    frame = pd.DataFrame({"item": ["i"], "who": ["a"], "label": ["x"], "category": ["c"]})
    assert list(ag.long_rows(frame, "item", "who", "label").columns) == [*ag.COLUMNS, "category"]
    with pytest.raises(ValueError, match="label"):
        ag.long_rows(frame.drop(columns="label"), "item", "who", "label")
    with pytest.raises(ValueError, match="long_rows"):
        ag.fleiss(frame)


def test_review_alpha_counts_an_edit_as_keep_per_revision_and_category():
    v = pd.DataFrame(
        [
            ("i1", 0, "a", "accept"),
            ("i1", 0, "b", "edit"),  # keep: agrees with a
            ("i2", 0, "a", "reject"),
            ("i2", 0, "b", "reject"),
            ("i3", 0, "a", "accept"),
            ("i3", 0, "b", "reject"),
            ("i3", 1, "c", "accept"),  # the edited revision: another unit, one reviewer
        ],
        columns=["item_id", "revision", "reviewer", "verdict"],
    )
    got = verdict_agreement(v, {"i1": "spatial", "i2": "spatial", "i3": "causal"})
    assert got["agreement"] == {"alpha": round(4 / 9, 4), "units": 3, "reviewers": 2}
    assert got["agreement_by_category"]["spatial"]["alpha"] == 1.0  # i1 and i2: both agree
    assert got["agreement_by_category"]["causal"]["units"] == 1
