"""Quality-gate logic: position re-balance, field problems, duplicates, blind scoring."""

import pandas as pd

from forge.checks import mcq
from forge.gates import checks as sg
from forge.items import fields
from forge.llm.types import LLMResult
from forge.splits.config import BlindConfig


def _items(n=60, split="test"):
    rows = []
    for i in range(n):
        rows.append(
            {
                "item_id": f"i{i:03d}",
                "split": split,
                "question": f"q{i}",
                "category": "c",
                "options": [f"right {i}", f"w1 {i}", f"w2 {i}", f"w3 {i}"],
                "option_types": ["correct", "FS", "SU", "NE"],
                "answer": "A",
                "references": None,
                "media_paths": None,
            }
        )
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
    base = {
        "item_id": "a",
        "question": "q",
        "category": "c",
        "options": ["x", "y"],
        "option_types": ["correct", "d"],
        "answer": "A",
        "references": None,
        "media_paths": ["media/x.png"],
    }
    assert fields.field_problem(pd.Series(base), tmp_path) is None
    cases = {
        "empty_field": [dict(base, question="  "), dict(base, options=["x", ""]), dict(base, category=None)],
        "contract_violation": [dict(base, answer="C"), dict(base, option_types=["correct"]), dict(base, answer="yes")],
        "media_missing": [dict(base, media_paths=["media/nope.png"])],
    }
    for reason, rows in cases.items():
        for r in rows:
            assert fields.field_problem(pd.Series(r), tmp_path)[0] == reason, r
    df = pd.DataFrame(
        [dict(base, item_id="b"), dict(base, item_id="a", question="Q!"), dict(base, item_id="c", question="other")]
    )
    assert sg.duplicate_items(df) == {"b": "a"}


def _res(item_id, answer, ok=True):
    return LLMResult(
        item_id=item_id,
        ok=ok,
        data={"answer": answer} if ok else None,
        text=None,
        error=None if ok else "x",
        error_class=None,
        prompt_name="blind_solver",
        prompt_hash="h",
        model="m",
        backend="openai",
        cached=False,
        attempts=1,
    )


def test_blind_scoring_flags_items_far_above_chance():
    df = _items(3)
    df.loc[2, "answer"] = "A,C"
    df.loc[2, "option_types"] = None
    cfg = BlindConfig(trials=5, alpha=0.05, min_accuracy=0.6)
    reqs = sg.blind_requests(df, prompt=object(), cfg=cfg)
    assert len(reqs) == 15 and not any(r.images for r in reqs)
    assert {r.params["seed"] for r in reqs} == set(range(5))
    results = (
        [_res("i000", "A")] * 5
        + [_res("i001", "B")] * 4
        + [_res("i001", "a)")]
        + [_res("i002", "C, A")] * 3
        + [_res("i002", "A", ok=False)] * 2
    )
    s = sg.score_blind(df, reqs, results, cfg)
    assert s["i000"].flagged and s["i000"].accuracy == 1.0
    assert not s["i001"].flagged and s["i001"].correct == 1
    assert s["i002"].trials == 3 and s["i002"].failed == 2 and s["i002"].correct == 3
    assert s["i002"].chance == round(1 / 15, 6) and s["i002"].flagged
    # the prompt variables never say how many options are correct: single and multi look alike
    single = next(r for r in reqs if r.item_id == "i000").variables
    multi = next(r for r in reqs if r.item_id == "i002").variables
    assert single.keys() == multi.keys() == {"question", "options", "letters"}
    assert sg.parse_letters("[stub] answer") is None and sg.parse_letters("b") == frozenset({1})


def test_paper_specific_columns_fold_into_extra():
    df = pd.DataFrame(
        [
            {
                "item_id": 1,
                "question": "q",
                "options": ["a", "b"],
                "answer": "A",
                "category": "c",
                "direct_expression": "the cat",
                "extra": '{"k": 1}',
            }
        ]
    )
    out = fields.normalise_items(df, "vague")
    assert list(out.columns) == fields.COMMON_COLUMNS + ["extra"]
    assert out.loc[0, "benchmark"] == "vague" and out.loc[0, "item_id"] == "1"
    import json

    assert json.loads(out.loc[0, "extra"]) == {"k": 1, "direct_expression": "the cat"}


def test_pool_blind_counts_a_trial_only_when_every_pair_is_right():
    df = _items(6).assign(options=[["ts", "fs"]] * 6, option_types=None)
    units = {f"i00{k}": f"question_id=q{k // 3}" for k in range(6)}  # two pools of 3 pairs
    cfg = BlindConfig(trials=5, alpha=0.05, min_accuracy=0.6)
    reqs = sg.blind_requests(df, prompt=object(), cfg=cfg)
    # pool q0: every pair right in every trial; pool q1: pair i005 wrong in trials 0, 1 and 2
    results = [_res(r.item_id, "B" if r.item_id == "i005" and r.params["seed"] < 3 else "A") for r in reqs]
    s = sg.score_blind(df, reqs, results, cfg, units)
    assert {s[f"i00{k}"].flagged for k in range(3)} == {True}
    assert s["i000"].chance == round(0.5**3, 6) and s["i000"].correct == 5
    assert {(s[f"i00{k}"].correct, s[f"i00{k}"].flagged) for k in range(3, 6)} == {(2, False)}
    # the same replies judged per item flag i003 and i004 (5/5) but not i005 (2/5)
    per_item = sg.score_blind(df, reqs, results, cfg)
    assert per_item["i003"].flagged and not per_item["i005"].flagged


def test_dropping_one_member_drops_its_whole_unit():
    units = {"a": "question_id=q1", "b": "question_id=q1", "c": "question_id=q2"}
    added = sg.whole_units({"a": ("empty_field", "question is empty")}, units)
    assert added == {"b": ("unit_member_dropped", "question_id=q1: member a was dropped (empty_field)")}
    df = pd.DataFrame(
        {
            "item_id": ["a", "b", "c", "d"],
            "labels": ['{"question_id": "q1"}', '{"question_id": "q1"}', '{"question_id": "q2"}', None],
        }
    )
    assert fields.unit_of(df, "question_id") == units and fields.unit_of(df, None) == {}


def test_guess_drop_probability_is_the_tests_false_positive_rate():
    cfg = BlindConfig(trials=5, alpha=0.05, min_accuracy=0.6)
    assert cfg.guess_drop_probability(0.5) == 1 / 32  # only 5/5 is flagged for two options
    assert cfg.guess_drop_probability(0.25) < cfg.alpha
    assert BlindConfig(trials=5, alpha=0.01).guess_drop_probability(0.5) == 0.0
    df = _items(2).assign(options=[["a", "b"], ["a", "b", "c", "d"]])
    assert sg.guess_drop_table(df, cfg) == {"k=2": 0.03125, "k=4": round(cfg.guess_drop_probability(0.25), 6)}


def test_blind_prompt_never_states_the_number_of_correct_options():
    from forge.gates.stages import BLIND_PROMPT
    from forge.llm.prompts import load_prompt

    p = load_prompt(BLIND_PROMPT)
    text = (p.system + p.user).lower()
    assert "exactly one" not in text and "one or more" not in text and "single" not in text
    assert set(p.variables) == {"question", "options", "letters"}


def test_duplicates_are_judged_per_unit_when_items_come_in_pools():
    base = {"question": "Which is true?", "media_paths": ["m.png"], "split": "test"}
    rows = [
        dict(base, item_id="a1", options=["x", "y"]),
        dict(base, item_id="a2", options=["x", "y"]),  # pool a
        dict(base, item_id="b1", options=["x", "y"]),
        dict(base, item_id="b2", options=["x", "y"]),  # pool b = a
        dict(base, item_id="c1", options=["x", "y"]),
        dict(base, item_id="c2", options=["u", "v"]),
    ]  # pool c differs
    df = pd.DataFrame(rows)
    units = {i: f"question_id={i[0]}" for i in df["item_id"]}
    assert sg.duplicate_units(df, units) == {"b1": "a1", "b2": "a1"}  # the whole equal pool goes, no pool is cut
    assert len(sg.duplicate_items(df)) == 4  # item by item, pools would be split
