"""MAIA pure logic: question checks, import, pool post-processing, foil checks, items."""

import json

import pandas as pd

from assets.recipes.maia.logic import foils as F
from assets.recipes.maia.logic import questions as Q
from assets.recipes.maia.logic.items import build_items
from assets.recipes.maia.logic.pools import Pool, postprocess_pools
from assets.recipes.maia.logic.taxonomy import categories, category_names
from forge.llm.types import LLMRequest


def test_twelve_categories_with_definitions():
    assert len(category_names()) == 12
    assert {c.macro for c in categories().values()} == {
        "causal",
        "counterfactual",
        "implicit",
        "out_of_scope",
        "planning",
        "sentiment",
        "spatial",
        "temporal",
        "uncertainty",
    }
    assert all(c.definition and c.structural and c.foil_edit for c in categories().values())


def test_question_checks():
    assert Q.is_yes_no("Is there a car in the video?")
    assert Q.is_yes_no("Does the chef smile?")
    assert not Q.is_yes_no("Is the light red or green?")
    assert not Q.is_yes_no("Why is the mozzarella melted?")
    assert Q.question_problems("What song is playing in the background?") == ["audio_based_question"]
    assert Q.question_problems("Where is the teacher?") == []
    assert Q.same_focus("Where is the chef standing?", "Where is the chef standing now?", 0.5)
    assert not Q.same_focus("Where is the chef standing?", "What colour is the bicycle?", 0.5)


def test_uniform_subsample():
    assert Q.uniform_subsample(list(range(32)), 4) == [0, 10, 21, 31]
    assert Q.uniform_subsample([1, 2], 8) == [1, 2]


def test_import_jsonl_and_csv(tmp_path):
    j = tmp_path / "q.jsonl"
    j.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "clip_id": "c1",
                    "category": "Partial Spatial",
                    "question": "Where is the ball at the end?",
                    "answers": ["On the grass.", "Near the jack."],
                },
                {"clip_id": "c1", "category": "partial spatial", "question": "Where is the referee at the start?"},
                {"clip_id": "c1", "category": "astrology", "question": "What sign?"},
            ]
        )
    )
    qs, bad = Q.load_import(j)
    assert [(q.category, q.slot, len(q.answers)) for q in qs] == [
        ("spatial_partial", "a", 2),
        ("spatial_partial", "b", 0),
    ]
    assert bad == [("row2", "import_unknown_category")]
    c = tmp_path / "q.csv"
    pd.DataFrame(
        [{"clip_id": "c2", "category": "sentiment", "question": "What mood?", "answer": f"a{i}"} for i in range(3)]
    ).to_csv(c, index=False)
    qs, bad = Q.load_import(c)
    assert len(qs) == 1 and qs[0].answers == ["a0", "a1", "a2"] and not bad


def test_pool_postprocess_rephrases_equal_and_overlapping_then_drops():
    pool = Pool(
        "q1",
        ["m0", "m1", "m2", "m3"],
        [
            "The chef stands beside the oven.",
            "The chef stands beside the oven.",
            "A tired cook yawns loudly.",
            "The chef stands beside the oven today.",
        ],
        context={"question": "Q?"},
    )
    fresh = iter(["He waits near a wooden counter.", "Close to the pizzeria entrance."])
    seen = []

    def rephrase(tasks):
        seen.extend((t.member_id, t.kind) for t in tasks)
        return [next(fresh) for _ in tasks]

    postprocess_pools([pool], rephrase, threshold=0.5, max_rounds=2)
    assert seen == [("m1", "equal"), ("m3", "overlap")]
    assert pool.dropped == {} and pool.rephrased == {1: 1, 3: 1}
    assert pool.stats_before["equal_pairs"] == 1 and pool.stats_after["equal_pairs"] == 0
    assert pool.stats_after["pairs_over_threshold"] == 0 and pool.originals[1] == "The chef stands beside the oven."

    stubborn = Pool("q2", ["x0", "x1"], ["same words here", "same words here"])
    postprocess_pools([stubborn], lambda ts: ["same words here" for _ in ts], threshold=0.5, max_rounds=2)
    assert stubborn.dropped == {1: "equal_unresolved"} and stubborn.rounds == 2


def test_foil_checks():
    req = LLMRequest(
        "s1",
        None,
        variables={"caption": "After baking, the pizza is placed on a plate.", "category_key": "spatial_partial"},
    )
    check = F.minimal_edit_check(0.6)
    assert check(req, {"foil": "After baking, the pizza is placed on a table."}) is None
    assert check(req, {"foil": "after baking, the pizza is placed on a plate"}).label == "major"
    assert "not minimal" in check(req, {"foil": "Dogs run wildly across sunny green meadows today."}).feedback
    assert F.edit_size("a b c d", "a x c d") == (1, 0.25)
    assert F.structural_verdict({"valid": False, "reason": "same place"}).label == "major"
    assert F.structural_verdict({"valid": True}).label == "pass"


def test_items_seeded_ab_and_open_ended():
    qs = pd.DataFrame(
        [
            {
                "question_id": "q1",
                "batch": "b",
                "clip_id": "c",
                "category": "sentiment",
                "macro_category": "sentiment",
                "question": "What mood?",
                "origin": "generated",
                "backend": "openai",
                "source_item_id": "v",
                "source": "s",
                "media_paths": ["f.jpg"],
            }
        ]
    )
    ans = pd.DataFrame(
        [
            {
                "answer_id": f"q1_a{i}",
                "question_id": "q1",
                "idx": i,
                "answer": f"ans {i}",
                "backend": "openai",
                "model": "m",
                "prompt_hash": "h",
            }
            for i in range(8)
        ]
    )
    st = pd.DataFrame(
        [
            {"statement_id": f"q1_s{i}", "question_id": "q1", "idx": i, "statement": f"true {i}", "backend": "openai"}
            for i in range(8)
        ]
    )
    fo = pd.DataFrame(
        [
            {
                "foil_id": f"q1_f{i}",
                "statement_id": f"q1_s{i}",
                "question_id": "q1",
                "foil": f"false {i}",
                "backend": "openai",
                "model": "m",
                "prompt_hash": "h",
                "edit_distance": 1,
                "nli_label": "contradiction",
            }
            for i in range(8)
        ]
    )
    info = {"c": {"item_id": "v", "source": "s", "channel": "ch", "media_paths": ["f.jpg"]}}
    items = build_items(qs, ans, st, fo, info, seed="x")
    sv = items[items["task"] == "statement_verification"]
    oe = items[items["task"] == "open_ended"]
    assert len(sv) == 8 and len(oe) == 1 and oe.iloc[0]["references"] == [f"ans {i}" for i in range(8)]
    for r in sv.itertuples():
        k = "AB".index(r.answer)
        assert r.option_types[k] == "correct" and r.options[k].startswith("true")
    assert set(sv["answer"]) == {"A", "B"}  # the shuffle uses both positions
    again = build_items(qs, ans, st, fo, info, seed="x")
    assert again["answer"].tolist() == items["answer"].tolist()
    # stages out of step (foils of statements that are gone): no item until they agree
    assert build_items(qs, ans, st.iloc[:7], fo, info, seed="x").empty
    # a foil no draw produced: a gap its pool's items report, the other 7 pairs and the question kept
    gap = build_items(qs, ans, st, fo.iloc[:7], info, seed="x")
    assert len(gap) == 7 + 1 and all(json.loads(e)["review"] == ["pool_short: 7/8 members"] for e in gap["extra"])
    # a pool whose members agree but are fewer than pool_size is kept, every item saying so
    short = build_items(qs, ans.iloc[1:], st.iloc[1:], fo.iloc[1:], info, seed="x")
    assert len(short) == 7 + 1
    assert all(json.loads(e)["review"] == ["pool_short: 7/8 members"] for e in short["extra"])
    # a flagged member's review reaches every item of its pool; clean pools say nothing
    flagged = fo.assign(review=[None] * 7 + ["refine_max_rounds: after 3 draws"])
    reviewed = build_items(qs, ans, st, flagged, info, seed="x")
    assert all(json.loads(e)["review"] == ["refine_max_rounds: after 3 draws"] for e in reviewed["extra"])
    assert all(json.loads(e)["review"] is None for e in items["extra"])
