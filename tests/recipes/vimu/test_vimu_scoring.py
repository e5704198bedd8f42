"""ViMU's own scorers (moved from tests/evals/test_scorers.py, beside the paper's other tests):
the multi-select score of RM/SV items (any wrong option scores 0) and the OE judge's rubric (Eq. 1)."""

import pytest

from assets.recipes.vimu.logic.items import multi_select_score
from assets.recipes.vimu.logic.scoring import vimu_judge_normalised, vimu_judge_total


def test_multi_select_score():
    assert multi_select_score(["A", "C"], ["A", "C"]) == 1.0
    assert multi_select_score(["A"], ["A", "C"]) == 0.5
    assert multi_select_score(["A", "B"], ["A", "C"]) == 0.0  # any wrong option → 0
    assert multi_select_score(["A", "B", "C"], ["A", "C"]) == 0.0


def test_vimu_judge_rubric():
    b = {
        "core_intent": 4,
        "implicit_signal": 2,
        "target_or_social_meaning": 1,
        "hallucination_penalty": 1,
        "literal_only_penalty": 0,
    }
    assert vimu_judge_total(b) == 6
    # official: the stated total, (total + 6) / 15
    assert vimu_judge_normalised({"score_total": 6, "score_breakdown": b}) == pytest.approx(12 / 15)
    assert vimu_judge_normalised({"score_total": -6}) == 0.0 and vimu_judge_normalised({"score_total": 9}) == 1.0
    # the stated total wins over the breakdown by default; the named option recomputes Eq. 1
    assert vimu_judge_normalised({"score_total": 3, "score_breakdown": b}) == pytest.approx(9 / 15)
    assert vimu_judge_normalised({"score_total": 3, "score_breakdown": b}, "breakdown") == pytest.approx(12 / 15)
    with pytest.raises(ValueError):
        vimu_judge_normalised({"score_breakdown": b})  # no stated total: unscored
    with pytest.raises(ValueError):
        vimu_judge_normalised({"score_total": 12})  # outside -6..9
    with pytest.raises(ValueError):
        vimu_judge_total({**b, "core_intent": 6})  # out of range: judge failure
    with pytest.raises(ValueError):
        vimu_judge_total({k: v for k, v in b.items() if k != "literal_only_penalty"})
