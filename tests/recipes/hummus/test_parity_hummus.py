"""Hummus parity (xiaoyuisrain/humorous-multimodal-metaphor-use: model_evaluation/prompts.py,
multimodal.py, monomodal.py; the repository publishes prompts and inference only, so answers are
read by the task's stated output format, Table 1 / §6.1). Reply forms per task, the text-only
ablation input, the thresholds calibrated for MiniLM, and the F1 / box aggregates."""

from __future__ import annotations

import pytest

from assets.recipes.hummus.logic.evaluation import text_variables as hummus_text_variables
from assets.recipes.hummus.logic.scoring import CALIBRATION_PAIRS
from forge.benchmarks.registry import get
from forge.evals.calibration import calibrate_task, calibrate_threshold, load_pairs
from forge.evals.config import benchmark_block, load_eval_config
from forge.evals.extract import extract_box, extract_choice, extract_highlight, extract_naming, extract_word
from forge.evals.scorers import box_iou, f1_per_class, span_overlap

YN = ["Yes", "No"]

CASES = [  # (task, reply, parsed value or None)
    ("cls", "Yes", "A"),
    ("cls", "No", "B"),
    ("cls", "Yes.", "A"),
    ("cls", "no", "B"),
    ("cls", "YES", "A"),
    ("cls", "Yes, the humor relies on a metaphor.", "A"),
    ("cls", "No, it is literal.", "B"),
    ("cls", "Answer: Yes", "A"),
    ("cls", "Yes or No", None),
    ("cls", "Maybe", None),
    ("cls", "", None),
    ("name", "LOVE IS A JOURNEY", "LOVE IS A JOURNEY"),
    ("name", '"THE BOSS IS A SHARK"', "THE BOSS IS A SHARK"),
    ("name", "The metaphor is:\nMARRIAGE IS A PRISON", "MARRIAGE IS A PRISON"),
    ("name", "lawyers are sharks", "LAWYERS ARE SHARKS"),
    ("name", "a shark", None),
    ("name", "", None),
    ("box", "shark: [0.1, 0.2, 0.3, 0.4]", ("shark", [0.1, 0.2, 0.3, 0.4])),
    ("box", "The desk: [0, 0, 0.5, 0.5]", ("The desk", [0.0, 0.0, 0.5, 0.5])),
    ("box", "shark: [0.1, 0.2, 1.3, 0.4]", None),
    ("box", "shark at top left", None),
    ("box", "shark: [0.1, 0.2, 0.0, 0.4]", None),
    ("label", "Shark", "shark"),
    ("label", "shark.", "shark"),
    ("label", "The shark", "the"),
    ("label", "", None),
    ("label", "42", None),
    ("hl", "My <i>boss</i> is a <i>shark</i>", ["boss", "shark"]),
    ("hl", "My boss is a shark", None),
    ("hl", "<I>boss</I> again", ["boss"]),
    ("hl", "<i> </i>", None),
]


def _parse(task, reply):
    if task == "cls":
        e = extract_choice(reply, YN)
        return e.letters[0] if e.ok else None
    if task == "name":
        e = extract_naming(reply)
        return e.text if e.ok else None
    if task == "box":
        e = extract_box(reply)
        return (e.values["label"], e.values["box"]) if e.ok else None
    if task == "label":
        e = extract_word(reply)
        return e.text if e.ok else None
    e = extract_highlight(reply)
    return e.values["spans"] if e.ok else None


@pytest.mark.parametrize("task,reply,value", CASES)
def test_reply_forms(task, reply, value):
    assert _parse(task, reply) == value


def test_table_size():
    assert len(CASES) >= 30


def test_text_only_input_as_monomodal_py():
    item = {
        "task": "classification",
        "question": "Caption: My boss is a shark.\n\nDoes the humor of the given "
        "image-and-caption combination involve metaphor use? Answer the question with Yes or No.",
    }
    v = hummus_text_variables(item, "An office with a shark at the desk.")
    from assets.recipes.hummus.spec import SPEC

    PROMPTS_DIR = SPEC.eval.prompts_dir
    from forge.llm.prompts import load_prompt

    text = load_prompt(PROMPTS_DIR / "hummus_text.yaml").render(v)[0]["content"]
    assert text == (
        "Does the humor of the given image-and-caption combination involve metaphor use? Answer the "
        "question with No or Yes.\n\nImage: An office with a shark at the desk.\nCaption: My boss is a shark."
    )


def test_thresholds_are_the_calibration_for_minilm():
    from forge.checks.embeddings import load_embedder

    emb = load_embedder()
    th = benchmark_block(load_eval_config(), get("hummus"))["thresholds"]
    for task in ("naming", "image_label"):
        r = calibrate_task(emb, task, load_pairs(CALIBRATION_PAIRS))
        assert th[task] == pytest.approx(round(r["threshold"], 2)), task
        assert r["match_mean"] > r["no_match_mean"]


def test_calibration_rule_hand_case():
    r = calibrate_threshold([0.9, 0.8, 0.55, 0.5, 0.2, 0.1], [True, True, True, False, False, False])
    assert r["threshold"] == pytest.approx(0.525) and r["balanced_accuracy"] == 1.0
    with pytest.raises(ValueError):
        calibrate_threshold([0.1, 0.2], [True, True])


def test_f1_box_and_span_hand_cases():
    # gold pos, pos, neg, neg; predicted pos, unreadable, pos, neg
    f = f1_per_class(["pos", None, "pos", "neg"], ["pos", "pos", "neg", "neg"], ["pos", "neg"])
    assert f["pos"] == pytest.approx(2 * 1 / (2 * 1 + 1 + 1)) and f["neg"] == pytest.approx(2 / 3)
    b = box_iou([0.0, 0.0, 0.5, 0.5], [0.25, 0.25, 0.5, 0.5])
    assert b["iou"] == pytest.approx(0.0625 / 0.4375) and b["precision"] == pytest.approx(0.25)
    s = span_overlap(["my boss"], ["boss"])
    assert s == {"jaccard": 0.5, "precision": 0.5, "recall": 1.0}
