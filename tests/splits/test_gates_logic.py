"""Quality-gate logic: position re-balance, field problems, duplicates, blind scoring."""

import pandas as pd

from forge.checks import mcq
from forge.llm.types import LLMResult
from forge.splits import gates as sg
from forge.splits.config import BlindConfig


def _items(n=60, split="test"):
    rows = []
    for i in range(n):
        rows.append({"item_id": f"i{i:03d}", "split": split, "question": f"q{i}", "category": "c",
                     "options": [f"right {i}", f"w1 {i}", f"w2 {i}", f"w3 {i}"],
                     "option_types": ["correct", "FS", "SU", "NE"], "answer": "A", "references": None,
                     "media_paths": None})
    return pd.DataFrame(rows)


def test_position_rebalance_keeps_types_aligned_and_is_seeded():
    df = _items()
    before = sg.position_figures(df, 0.02)
    assert before[0].max_deviation == 0.75 and not before[0].passed
    out, moved = sg.rebalance_positions(df, 0.02, seed=1)
    after = sg.position_figures(out, 0.02)
    assert after[0].passed and after[0].counts == {"A": 15, "B": 15, "C": 15, "D": 15}
    assert moved == 45 and out["reshuffled"].all()
    for _, r in out.iterrows():
        k = mcq.letter_index(r["answer"])
        assert r["options"][k].startswith("right ") and r["option_types"][k] == "correct"
        # every option keeps its own type
        for o, t in zip(r["options"], r["option_types"]):
            assert {"right": "correct", "w1": "FS", "w2": "SU", "w3": "NE"}[o.split()[0]] == t
    again, _ = sg.rebalance_positions(df, 0.02, seed=1)
    assert again["answer"].tolist() == out["answer"].tolist()
    # a balanced split is left alone
    untouched, moved2 = sg.rebalance_positions(out.assign(reshuffled=False), 0.02, seed=1)
    assert moved2 == 0 and not untouched["reshuffled"].any()


def test_small_split_tolerance_is_what_the_size_allows():
    assert sg.achievable_deviation(15, 6) > 0.02
    df = _items(15)
    out, _ = sg.rebalance_positions(df, 0.02, seed=0)
    assert all(f.passed for f in sg.position_figures(out, 0.02))


def test_field_problems_and_duplicates(tmp_path):
    (tmp_path / "media").mkdir()
    (tmp_path / "media/x.png").write_bytes(b"x")
    base = {"item_id": "a", "question": "q", "category": "c", "options": ["x", "y"], "option_types": ["correct", "d"],
            "answer": "A", "references": None, "media_paths": ["media/x.png"]}
    assert sg.field_problem(pd.Series(base), tmp_path) is None
    cases = {
        "empty_field": [dict(base, question="  "), dict(base, options=["x", ""]), dict(base, category=None)],
        "contract_violation": [dict(base, answer="C"), dict(base, option_types=["correct"]), dict(base, answer="yes")],
        "media_missing": [dict(base, media_paths=["media/nope.png"])],
    }
    for reason, rows in cases.items():
        for r in rows:
            assert sg.field_problem(pd.Series(r), tmp_path)[0] == reason, r
    df = pd.DataFrame([dict(base, item_id="b"), dict(base, item_id="a", question="Q!"), dict(base, item_id="c", question="other")])
    assert sg.duplicate_items(df) == {"b": "a"}


def _res(item_id, answer, ok=True):
    return LLMResult(item_id=item_id, ok=ok, data={"answer": answer} if ok else None, text=None, error=None if ok else "x",
                     error_class=None, prompt_name="blind_solver", prompt_hash="h", model="m", backend="openai",
                     cached=False, attempts=1)


def test_blind_scoring_flags_items_far_above_chance():
    df = _items(3)
    df.loc[2, "answer"] = "A,C"
    df.loc[2, "option_types"] = None
    cfg = BlindConfig(trials=5, alpha=0.05, min_accuracy=0.6)
    reqs = sg.blind_requests(df, prompt=object(), cfg=cfg)
    assert len(reqs) == 15 and not any(r.images for r in reqs)
    assert {r.params["seed"] for r in reqs} == set(range(5))
    results = ([_res("i000", "A")] * 5 + [_res("i001", "B")] * 4 + [_res("i001", "a)")]
               + [_res("i002", "C, A")] * 3 + [_res("i002", "A", ok=False)] * 2)
    s = sg.score_blind(df, results, cfg)
    assert s["i000"].flagged and s["i000"].accuracy == 1.0
    assert not s["i001"].flagged and s["i001"].correct == 1
    assert s["i002"].trials == 3 and s["i002"].failed == 2 and s["i002"].correct == 3
    assert s["i002"].chance == round(1 / 15, 4) and s["i002"].flagged
    assert sg.parse_letters("[stub] answer") is None and sg.parse_letters("b") == frozenset({1})


def test_paper_specific_columns_fold_into_extra():
    df = pd.DataFrame([{"item_id": 1, "question": "q", "options": ["a", "b"], "answer": "A", "category": "c",
                        "direct_expression": "the cat", "extra": '{"k": 1}'}])
    out = sg.normalise_items(df, "vague")
    assert list(out.columns) == sg.COMMON_COLUMNS + ["extra"]
    assert out.loc[0, "benchmark"] == "vague" and out.loc[0, "item_id"] == "1"
    import json

    assert json.loads(out.loc[0, "extra"]) == {"k": 1, "direct_expression": "the cat"}
