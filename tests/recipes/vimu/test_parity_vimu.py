"""ViMU parity with the official scripts (LiQiiiii/Video-Metaphorical-Understanding, scripts/
10-vimu_eg.py, 11-vimu_eg_score.py, 20-vimu_ss.py, 21-vimu_ss_score.py, 01-vimu_oe_judge.py,
02-vimu_oe_score.py). Expected values derived by reading that code (docs/evals.md, "ViMU rules")."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from assets.recipes.vimu.logic.evaluation import clean_option_keys, extract_vimu_selection
from assets.recipes.vimu.logic.report import oe_cross_model as vimu_oe_cross_model
from assets.recipes.vimu.logic.scoring import vimu_oe_intersection, vimu_oe_normalised, vimu_oe_total, vimu_set_score
from forge.benchmarks.registry import get
from forge.evals.scorers import micro_f1, selection_conservatism
from forge.evals.scoring import Scorer, score_benchmark

KEYS = ["A", "B", "C", "D", "E"]
SEL = json.dumps

# (reply, selection the official run stores; "gold" for the score column is A,C)
CASES = [
    (SEL({"selected_options": ["A", "C"]}), ["A", "C"]),
    (SEL({"selected_options": []}), []),  # allowed: empty selection
    (SEL({"selected_options": [" A ", "A", "b", "F"]}), ["A"]),  # strip, dedupe, only valid keys
    (SEL({"selected_options": "A"}), []),  # not a list
    (SEL({"selected_options": ["C", "A"]}), ["C", "A"]),  # order kept, set-scored
    (SEL({"selected_options": ["A", "C", "A"]}), ["A", "C"]),
    (SEL({"selected_options": [1, "C"]}), ["C"]),  # str(1) is no key
    (SEL({"selected_options": ["A", None]}), ["A"]),  # str(None) = "None"
    (SEL({"selected_options": ["E", "D", "C", "B", "A"]}), ["E", "D", "C", "B", "A"]),
    (SEL({"selected_options": ["AB"]}), []),
    (SEL({"selected_options": ["A."]}), []),
    (SEL({"selected_options": ["a", "c"]}), []),  # case matters
    (SEL({"selected_options": ["\tC\n"]}), ["C"]),
    (SEL({"selected_options": ["A"], "why": "x"}), ["A"]),  # extra fields ignored
    (SEL({"answer": ["A"]}), []),  # no selected_options → []
    (SEL({}), []),
    ("  " + SEL({"selected_options": ["B"]}) + "\n", ["B"]),  # json.loads tolerates whitespace
    ('{"selected_options": ["A", "C"],}', []),  # invalid JSON → inference error
    ("```json\n" + SEL({"selected_options": ["A"]}) + "\n```", []),  # fenced: not JSON officially
    ("A, C", []),  # prose: not JSON officially
    ("The answer is A and C.", []),
    ('["A", "C"]', []),  # a list, not an object
    ("null", []),
    ("", []),
    (SEL({"selected_options": ["A", "B", "C"]}), ["A", "B", "C"]),
    (SEL({"selected_options": ["B"]}), ["B"]),
    (SEL({"selected_options": ["C"]}), ["C"]),
    (SEL({"selected_options": ["F", "G"]}), []),
    (SEL({"selected_options": [" "]}), []),
    (SEL({"selected_options": {"A": True}}), []),  # a dict, not a list
    ('{"selected_options": ["A", "C"]} trailing', []),  # extra data → not JSON
]
GOLD = ["A", "C"]


def _official_score(pred):
    p, g = set(pred), set(GOLD)
    return 0.0 if (p - g or not g) else len(p & g) / len(g)


@pytest.mark.parametrize("reply,selection", CASES)
def test_official_selection_and_score(reply, selection):
    e = extract_vimu_selection(reply, KEYS)
    got = list(e.letters) if e.ok else []
    assert got == selection
    assert vimu_set_score(got, GOLD) == pytest.approx(_official_score(selection))


def test_table_size_and_lenient_option():
    assert len(CASES) >= 30
    # named option vimu_lenient_parse: fenced / embedded JSON and prose letters are read
    fenced = "```json\n" + SEL({"selected_options": ["A"]}) + "\n```"
    assert extract_vimu_selection(fenced, KEYS, prose_fallback=True).letters == ("A",)
    assert extract_vimu_selection("A, C", KEYS, prose_fallback=True).letters == ("A", "C")
    assert clean_option_keys([" B", "B", "Z"], KEYS) == ["B"]


def test_set_score_formula():
    assert vimu_set_score(["A", "C"], ["A", "C"]) == 1.0
    assert vimu_set_score(["A"], ["A", "C"]) == 0.5
    assert vimu_set_score([], ["A", "C"]) == 0.0  # empty prediction
    assert vimu_set_score(["A", "B"], ["A", "C"]) == 0.0  # any false positive
    assert vimu_set_score(["A"], []) == 0.0 and vimu_set_score([], []) == 0.0  # empty gold


def test_oe_total_and_normalisation():
    assert vimu_oe_normalised(-6) == 0.0 and vimu_oe_normalised(9) == 1.0
    assert vimu_oe_normalised(-1) == pytest.approx(5 / 15)  # inference error
    assert (
        vimu_oe_total(
            {
                "score_total": 4,
                "score_breakdown": {
                    "core_intent": 5,
                    "implicit_signal": 3,
                    "target_or_social_meaning": 1,
                    "hallucination_penalty": 0,
                    "literal_only_penalty": 0,
                },
            }
        )
        == 4
    )
    # hand case: totals 9, 3, -1 → mean 11/3 → (11/3 + 6) / 15 × 100 = 64.44…
    assert np.mean([vimu_oe_normalised(t) for t in (9, 3, -1)]) * 100 == pytest.approx((11 / 3 + 6) / 15 * 100)


def test_cross_model_intersection_hand_case():
    rows = [
        ("m1", "v1", 9.0),
        ("m1", "v2", 3.0),
        ("m1", "v3", 6.0),
        ("m2", "v1", 0.0),
        ("m2", "v2", None),
        ("m2", "v3", -3.0),  # m2 lacks a total for v2
        ("m3", "v1", 6.0),
        ("m3", "v3", 9.0),
    ]  # m3 was never run on v2
    common = vimu_oe_intersection(rows)
    assert common == {"m1": [9.0, 6.0], "m2": [0.0, -3.0], "m3": [6.0, 9.0]}
    preds = pd.DataFrame(
        {
            "benchmark": "vimu",
            "category": "OE",
            "setting": "unguided",
            "model": [m for m, _, _ in rows],
            "source_item_id": [v for _, v, _ in rows],
            "detail": [json.dumps({"oe_total": t}) for *_, t in rows],
        }
    )
    out = vimu_oe_cross_model(preds).set_index("model")
    assert out.loc["m1", "n_videos"] == 2 and out.loc["m1", "avg_raw_score"] == pytest.approx(7.5)
    assert out.loc["m1", "OE"] == pytest.approx((7.5 + 6) / 15 * 100)
    assert out.loc["m2", "OE"] == pytest.approx((-1.5 + 6) / 15 * 100)


def test_micro_f1_and_conservatism_hand_case():
    preds = [["A"], ["A", "B"], []]
    golds = [["A", "C"], ["A"], ["B"]]
    # TP 2 (A, A); predicted 3; gold 4 → P 2/3, R 1/2, F1 4/7
    m = micro_f1(preds, golds)
    assert (
        m["precision"] == pytest.approx(2 / 3) and m["recall"] == pytest.approx(0.5) and m["f1"] == pytest.approx(4 / 7)
    )
    assert selection_conservatism(preds, golds) == pytest.approx((3 - 4) / 3)


def _rows(task, statuses, scores, preds, golds, totals=None):
    n = len(statuses)
    det = [
        {} if s == "call_failed" else {"pred_set": p, "gold_set": g, "composition": "exact"}
        for s, p, g in zip(statuses, preds or [None] * n, golds or [None] * n)
    ]
    if totals is not None:
        det = [{"oe_total": t} for t in totals]
    return pd.DataFrame(
        {
            "setting": "unguided",
            "item_id": [f"{task}{k}" for k in range(n)],
            "variant": 0,
            "task": "multi_select" if task != "OE" else "open_ended",
            "category": task,
            "source_item_id": [f"v{k}" for k in range(n)],
            "status": statuses,
            "score": scores,
            "correct": None,
            "detail": det,
            "judge_ok": None,
            "gold": [",".join(g) for g in golds] if golds else None,
        }
    )


def test_task_means_all_avg_and_failed_calls():
    oe = _rows(
        "OE",
        ["ok", "ok", "call_failed"],
        [1.0, vimu_oe_normalised(3), vimu_oe_normalised(-1)],
        None,
        None,
        totals=[9, 3, -1],
    )
    eg = _rows("EG", ["ok", "ok", "call_failed"], [1.0, 0.5, None], [["A"], ["A"], []], [["A"], ["A", "C"], ["B"]])
    rm = _rows("RM", ["ok", "unparseable"], [1.0, 0.0], [["B"], []], [["B"], ["B"]])
    sv = _rows("SV", ["ok", "ok"], [0.0, 1.0], [["A", "D"], ["D"]], [["D"], ["D"]])
    p = pd.concat([oe, eg, rm, sv], ignore_index=True)
    items = pd.DataFrame({"item_id": p["item_id"], "labels": [{}] * len(p)})
    rows = {(r["metric"], r["slice"]): r for r in score_benchmark(get("vimu"), p, items, Scorer(n_boot=0))}
    oe_v = (11 / 3 + 6) / 15 * 100
    assert rows[("OE", "all")]["value"] == pytest.approx(oe_v)
    assert rows[("EG", "all")]["value"] == pytest.approx(50.0)  # failed call = empty selection = 0
    assert rows[("EG", "all")]["coverage"] == pytest.approx(2 / 3)
    assert rows[("RM", "all")]["value"] == pytest.approx(50.0) and rows[("SV", "all")]["value"] == pytest.approx(50.0)
    assert rows[("SSU-Avg", "all")]["value"] == pytest.approx(50.0)
    assert rows[("All-Avg", "all")]["value"] == pytest.approx((oe_v + 50 + 50 + 50) / 4)
    assert rows[("OE_success_rate", "all")]["value"] == pytest.approx(2 / 3)  # totals >= 3
    assert rows[("OE_wrong_rate", "all")]["value"] == pytest.approx(1 / 3)  # totals <= 0
    assert rows[("selection_conservatism", "task=EG")]["value"] == pytest.approx((2 - 4) / 3)
    assert rows[("micro_f1", "task=EG")]["value"] == pytest.approx(2 * (1.0 * 0.5) / 1.5)
