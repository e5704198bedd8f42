"""Per-annotator human baselines (forge/evals/per_person.py): each person scored by the benchmark's
own scorers, their average with a shared-draw interval, their best; the seeded subset; the
answer picking (empty refused, excluded annotators, later answers)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from forge.benchmarks.registry import get
from forge.evals import per_person as pp
from forge.evals.bootstrap import cluster_bootstrap
from forge.evals.human import pick

ITEMS = [f"i{k}" for k in range(1, 6)]
DOMAIN = {"i1": "life", "i2": "life", "i3": "art", "i4": "art", "i5": "art"}


def items() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item_id": ITEMS,
            "labels": [json.dumps({"domain": DOMAIN[i]}) for i in ITEMS],
            "source_item_id": [f"img{i}" for i in ITEMS],
        }
    )


def preds(person: str, right: dict[str, bool]) -> pd.DataFrame:
    """II-Bench prediction rows as forge.evals.requests.prediction_rows writes them (detail as dicts)."""
    return pd.DataFrame(
        [
            {
                "model": pp.person_model(person),
                "setting": "none",
                "item_id": i,
                "variant": 0,
                "task": "mcq",
                "source_item_id": f"img{i}",
                "status": "ok",
                "parse_method": "letter",
                "score": float(ok),
                "correct": ok,
                "detail": {},
            }
            for i, ok in right.items()
        ]
    )


ANSWERS = {  # three people, hand-made: 4/5, 3/5, 5/5 right
    "a@x": {"i1": True, "i2": True, "i3": True, "i4": False, "i5": True},
    "b@x": {"i1": True, "i2": False, "i3": True, "i4": False, "i5": True},
    "c@x": dict.fromkeys(ITEMS, True),
}
BOOT = (200, 0, 0.05)


def people() -> list[pp.PersonScores]:
    return [pp.score_person(get("iibench"), p, preds(p, a), items(), BOOT) for p, a in ANSWERS.items()]


def _row(df: pd.DataFrame, model: str, metric: str = "accuracy", slice_: str = "all") -> pd.Series:
    return df[(df.model == model) & (df.metric == metric) & (df.slice == slice_)].iloc[0]


def test_each_person_avg_and_best_equal_a_hand_computation():
    per, summary, best = pp.baseline_frames(people(), "none", BOOT)
    acc = {p: _row(per, pp.person_model(p)).value for p in ANSWERS}
    assert acc == {"a@x": 0.8, "b@x": 0.6, "c@x": 1.0}
    assert all(_row(per, pp.person_model(p)).n == 5 for p in ANSWERS)
    avg, top = _row(summary, pp.AVG), _row(summary, pp.BEST)
    assert avg.value == pytest.approx((0.8 + 0.6 + 1.0) / 3) and avg.n == 5 and bool(avg.primary)
    assert best == "c@x" and top.value == 1.0 and per.loc[per.best, "person"].unique().tolist() == ["c@x"]
    # slices: the average is the mean of each person's slice value (life: 1, 0.5, 1)
    assert _row(summary, pp.AVG, slice_="domain=life").value == pytest.approx((1.0 + 0.5 + 1.0) / 3)
    assert _row(summary, pp.BEST, slice_="domain=art").value == 1.0


def test_the_average_interval_resamples_items_shared_by_every_person():
    _, summary, _ = pp.baseline_frames(people(), "none", BOOT)
    avg = _row(summary, pp.AVG)
    m = np.array([[float(ANSWERS[p][i]) for i in ITEMS] for p in ANSWERS])  # people × items

    def stat(w: np.ndarray) -> float:  # w: one weight per item, the same draw for every person
        return float(np.mean([(row * w).sum() / w.sum() for row in m]))

    lo, hi = cluster_bootstrap(stat, [f"img{i}" for i in ITEMS], *BOOT)
    assert (avg.ci_low, avg.ci_high) == pytest.approx((lo, hi))
    assert avg.ci_low <= avg.value <= avg.ci_high and avg.ci_low < avg.ci_high


def test_one_person_is_both_avg_and_best():
    one = [pp.score_person(get("iibench"), "a@x", preds("a@x", ANSWERS["a@x"]), items(), BOOT)]
    _, summary, best = pp.baseline_frames(one, "none", BOOT)
    assert best == "a@x" and _row(summary, pp.AVG).value == _row(summary, pp.BEST).value == 0.8


def _answer(aid: str, item: str, person: str, result: list, flag: str | None = None) -> dict:
    return {"answer_id": aid, "item_id": item, "person": person, "flag": flag, "annotation": {"result": result}}


def test_pick_refuses_empty_answers_and_excludes_annotators_with_a_reason():
    a = [{"from_name": "choice", "to_name": "question", "type": "choices", "value": {"choices": ["A"]}}]
    found = [
        _answer("1", "i1", "a@x", a),
        _answer("2", "i1", "a@x", a),  # the same person again: not scored twice
        _answer("3", "i1", "b@x", []),  # empty
        _answer("4", "i1", "c@x", a),  # failed the controls
        _answer("5", "i9", "d@x", a),  # outside the subset
        _answer("6", "i2", "d@x", a, flag="changed_by_other: e@x changed the annotation d@x made"),
        _answer("7", "i2", "e@x", a),  # reviewed i2
        _answer("8", "i2", "b@x", a),
    ]
    out = pick(found, {("i2", "e@x"): "saw_gold: review verdict v1"}, {"i1", "i2"}, {"c@x": "answers: 1/2 controls"})
    why = {r["answer_id"]: (r["excluded_reason"] or "").split(":")[0] for r in out}
    assert why == {
        "1": "",
        "2": "later_answer",
        "3": "refused",
        "4": "excluded_annotator",
        "5": "not_in_subset",
        "6": "changed_by_other",
        "7": "saw_gold",
        "8": "",
    }
    assert [r["answer_id"] for r in out if r["used"]] == ["1", "8"]
    assert "answers: 1/2 controls" in out[3]["excluded_reason"]


def test_human_best_counts_only_people_with_enough_items_and_shows_their_n():
    """One item right is no best: ``d@x`` answered one item (1/1) and is left out of the best below
    ``best_min_items``; the best row's ``n`` is the best person's items."""
    lucky = pp.score_person(get("iibench"), "d@x", preds("d@x", {"i1": True}), items(), BOOT)
    everyone = [*people(), lucky]
    assert pp.baseline_frames(everyone, "none", BOOT)[2] in ("c@x", "d@x")  # 1 item allowed: ties by n
    _, summary, best = pp.baseline_frames(everyone, "none", BOOT, best_min_items=3)
    assert best == "c@x" and _row(summary, pp.BEST).n == 5
    assert pp.baseline_frames([lucky], "none", BOOT, best_min_items=3)[2] is None  # nobody qualifies: no best row


def test_the_human_run_declares_the_best_minimum_and_defaults_to_half_its_items():
    from forge.evals.human import best_min_items, human_block

    spec = get("iibench")
    h = human_block(spec, {"benchmarks": {"iibench": {"human": {"best_min_items": 40}}}})
    assert best_min_items(h, 1399) == 40
    h = human_block(spec, {"benchmarks": {"iibench": {"human": {}}}})
    assert best_min_items(h, 1399) == 700 and best_min_items(h, 1) == 1
    with pytest.raises(ValueError, match="best_min_items"):
        human_block(spec, {"benchmarks": {"iibench": {"human": {"best_min_items": 0}}}})
    assert spec.review.human_answers == 3  # II-Bench: three people per question
