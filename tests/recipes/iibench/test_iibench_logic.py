"""II-Bench pure logic: label validation, human verdict tables, question checks, items."""

import json

import pytest

from assets.recipes.iibench.logic import implication, items, taxonomy


def test_label_sets_match_the_paper():
    sizes = {a: len(taxonomy.values(a)) for a in taxonomy.AXES}
    assert sizes == {"image_type": 7, "domain": 6, "emotion": 3, "difficulty": 3, "rhetoric": 9}


def test_validate_labels_normalises_aliases_and_reports_unknowns():
    labels, problems = taxonomy.validate_labels(
        {
            "image_type": "Multi-panel Comic",
            "domain": "Others",
            "emotion": "NEGATIVE",
            "difficulty": "medium",
            "rhetoric": ["Metaphor", "exaggeration", "metaphor"],
        }
    )
    assert problems == []
    assert labels == {
        "image_type": "multi-panel comic",
        "domain": "other",
        "emotion": "negative",
        "difficulty": "middle",
        "rhetoric": ["metaphor", "exaggerate"],
    }
    _, problems = taxonomy.validate_labels(
        {"image_type": "photo", "domain": "life", "emotion": "positive", "difficulty": "easy", "rhetoric": []}
    )
    assert any(p.startswith("image_type") for p in problems)
    assert any(p.startswith("rhetoric") for p in problems)


@pytest.mark.parametrize("n, asked", [(None, "1 to 3"), (1, "1"), (2, "2"), (5, "3"), (0, "1")])
def test_question_count_asked_of_the_writer(n, asked):
    assert items.questions_wanted(n) == asked


def test_human_verdicts_csv_and_jsonl(tmp_path):
    csv_path = tmp_path / "v.csv"
    csv_path.write_text("frame_id,verdict,note\nimg_a,keep,clear satire\nimg_b,DROP,plain photo\n")
    v = implication.load_human_verdicts(csv_path)
    assert v["img_a"].keep and not v["img_b"].keep and v["img_b"].note == "plain photo"
    jl = tmp_path / "v.jsonl"
    jl.write_text(json.dumps({"id": "item9", "verdict": "no"}) + "\n\n" + json.dumps({"id": "x", "keep": True}) + "\n")
    v = implication.load_human_verdicts(jl)
    assert implication.human_verdict_for(v, "img_z", "item9").keep is False
    assert implication.human_verdict_for(v, "x", "other").keep is True
    assert implication.human_verdict_for(v, "nope", "nope") is None
    bad = tmp_path / "bad.csv"
    bad.write_text("id,verdict\nimg_a,maybe\n")
    with pytest.raises(implication.VerdictTableError, match="maybe"):
        implication.load_human_verdicts(bad)
    assert implication.load_human_verdicts(None) == {}


def _q(**kw):
    base = dict(
        question="What does the melting clock suggest?",
        correct="Time slips away unnoticed.",
        distractors=[
            "Clocks are fragile objects.",
            "Summer heat damages furniture.",
            "Art should be decorative.",
            "Punctuality is overrated at work.",
            "Dreams predict the future.",
        ],
    )
    base.update(kw)
    return items.Question(base["question"], base["correct"], base["distractors"])


def test_code_check_duplicates_and_counts():
    assert items.code_check(_q()).problems == []
    dup = items.code_check(
        _q(
            distractors=[
                "Time slips away unnoticed!",
                "b option here",
                "c option there",
                "d quite different",
                "e something else",
            ]
        )
    )
    assert items.DUPLICATE_OPTIONS in dup.problems and "correct answer" in dup.feedback[0]
    short = items.code_check(_q(distractors=["only one"]))
    assert items.primary_reason(short) == items.BAD_OPTIONS


def test_apply_judge_also_correct_and_implausible():
    ok = {
        "answer_supported": True,
        "distractors": [{"distractor": i, "plausible": True, "also_correct": False, "reason": ""} for i in range(1, 6)],
    }
    assert items.apply_judge(_q(), ok).problems == []
    bad = json.loads(json.dumps(ok))
    bad["distractors"][1]["also_correct"] = True
    bad["distractors"][3]["plausible"] = False
    q = items.apply_judge(_q(), bad)
    assert items.primary_reason(q) == items.ALSO_CORRECT and items.IMPLAUSIBLE in q.problems
    assert "distractor 2 is also a correct answer" in items.feedback_text([q])
    unsupported = dict(ok, answer_supported=False)
    assert items.primary_reason(items.apply_judge(_q(), unsupported)) == items.ANSWER_UNSUPPORTED


def test_build_item_seeded_and_common_columns():
    image = {"frame_id": "img_1", "item_id": "it1", "path": "media/images/a.png", "source": "s", "batch": "s-0000"}
    labels = {
        "image_type": "meme",
        "domain": "life",
        "emotion": "neutral",
        "rhetoric": ["contrast"],
        "difficulty": "easy",
        "explanation": "x",
    }
    a = items.build_item(_q(), image, labels, seed=7)
    b = items.build_item(_q(), image, labels, seed=7)
    assert a["options"] == b["options"] and len(a["options"]) == 6
    assert a["options"]["ABCDEF".index(a["answer"])] == "Time slips away unnoticed."
    assert a["option_types"].count("correct") == 1
    assert json.loads(a["labels"])["rhetoric"] == ["contrast"] and a["category"] == "life"
    # Over many seeds the correct option lands in every position.
    positions = {items.build_item(_q(), image, labels, seed=s)["answer"] for s in range(60)}
    assert positions == set("ABCDEF")


def test_label_explanation_in_another_language_is_wrong_language_first():
    from assets.recipes.iibench.assets import label_checks

    lang, labels = label_checks(40)
    bad = {"explanation": "L'immagine mostra come il tempo passato al telefono consumi lentamente la vita."}
    assert lang(None, bad).source == "wrong_language" and labels(None, bad) is None
    good = {"explanation": "The image shows how time spent on the phone slowly eats away at life."}
    assert lang(None, good) is None and labels(None, good).source == "labels_valid"  # no label fields given
