"""VAGUE parity (Hazel-Heejeong-Nam/VAGUE: utils/exp_prompts.py, utils/util.py, models/gpt.py; the
repository stores raw replies and publishes no parser, so labels follow its prompts: "Output only
the letter among A,B,C and D", CoT "Your answer2 (intention) : X"). Prompts byte for byte, the
label of each reply form, and the Table 1–3 aggregates on a hand-computed case."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from assets.recipes.vague.logic.evaluation import extract_vague
from assets.recipes.vague.spec import SPEC as VAGUE_SPEC
from forge.benchmarks.registry import get
from forge.evals import requests as rq
from forge.evals.config import ModelSpec, load_eval_config, settings_for
from forge.evals.scoring import Scorer, score_benchmark
from forge.llm.prompts import load_prompt

PROMPTS_DIR = VAGUE_SPEC.eval.prompts_dir

OPTS = [
    "The speaker wants person1 to admire the motorcycle.",
    "The speaker wants person1 to move the sedan.",
    "The speaker wants person1 to play a puzzle game.",
    "The speaker wants person1 to move the bicycle.",
]

CASES = [
    ("B", "B"),
    ("(B)", "B"),
    ("B.", "B"),
    ("b", "B"),
    ("Answer: B", "B"),
    ("The answer is B.", "B"),
    ("B: The speaker wants person1 to move the sedan.", "B"),
    ("**B**", "B"),
    ("Your answer : B", "B"),
    (
        "Your answer1 (reasoning) : Let's think step by step. Option A is a fake scene.\nYour answer2 (intention) : B",
        "B",
    ),
    ("Your answer1 (reasoning) : Let's think step by step. (A) and (C) fail.\nYour answer2 (intention) : (B)", "B"),
    ("Your answer1 (reasoning): Let's think step by step...\nYour answer2 (intention): D", "D"),
    ("Let's think step by step. A is unlikely.\nYour answer2 (intention) : C", "C"),
    ("The speaker wants person1 to move the sedan.", "B"),
    ("I pick (C).", "C"),
    ("Option D.", "D"),
    ("A", "A"),
    ("D)", "D"),
    ("[C]", "C"),
    ("c.", "C"),
    ("", None),
    ("E", None),
    ("A or B", None),
    ("(A) and (D)", None),
    ("I am not sure.", None),
    ("None of them", None),
    ("Final answer: A", "A"),
    ("answer: (d)", "D"),
    ("Answer - C", "C"),
    ("Your answer2 (intention) :", None),
    ("AB", None),
]


@pytest.mark.parametrize("reply,label", CASES)
def test_reply_label(reply, label):
    e = extract_vague(reply, OPTS)
    assert (e.letters[0] if e.ok else None) == label


def test_table_size():
    assert len(CASES) >= 30


HEAD_IMG = (
    "Select the option that best explains the underlying intention of the speaker's utterance based on the "
    "given image. \nMake sure any possible situation outside of the image SHOULD NOT affect your choice.\n"
    "We assume that the speaker wants the listener to take a specific action appropriate to the situation.\n"
)
HEAD_SM = HEAD_IMG.replace("based on the given image. ", "based on the description of the scene. ").replace(
    "outside of the image", "outside of the scene"
)
ITEM = {
    "item_id": "v1",
    "benchmark": "vague",
    "task": "mcq",
    "question": "Q",
    "options": OPTS,
    "answer": "B",
    "media_paths": ["img/v1.jpg"],
    "source_item_id": "s1",
    "source": "vcr",
    "indirect_expression": "Hey person1, this parking's a bit too special, isn't it?",
    "labels": {"subject": "person1"},
}
CHOICES = "\n".join(f"{L}: {o}" for L, o in zip("ABCD", OPTS))
UTT = ITEM["indirect_expression"]
MCQ_TAIL = "\nYour answer : (Output only the letter among A,B,C and D)\n    "
COT_TAIL = (
    "\nYour answer1 (reasoning) : (Output your reasoning process in 2~3 sentences, which starts with "
    '"Let\'s think step by step.")\nYour answer2 (intention) : (Output only the letter among A,B,C and D)\n    '
)
EXPECTED = {
    "VLM": "\n" + HEAD_IMG + f"\nUtterance : {UTT}\n[Choices]\n{CHOICES}\n" + MCQ_TAIL,
    "LM": (
        "\nSelect the option that best explains the intention of the speaker's utterance. \nWe assume that the "
        f"speaker wants the listener to take a specific action. \n\nUtterance : {UTT}\n[Choices]\n{CHOICES}\n"
        + MCQ_TAIL
    ),
    "SM": "\n" + HEAD_SM + f"\nScene Description : CAP\nUtterance : {UTT}\n[Choices]\n{CHOICES}\n" + MCQ_TAIL,
    "VLM+CoT": "\n"
    + HEAD_IMG
    + "Also, explain reasoning process of your answer.\n\n"
    + f"Utterance : {UTT}\n[Choices]\n{CHOICES}\n"
    + COT_TAIL,
    "SM+CoT": "\n"
    + HEAD_SM
    + "Also, explain reasoning process of your answer.\n\n"
    + f"Scene Description : CAP\nUtterance : {UTT}\n[Choices]\n{CHOICES}\n"
    + COT_TAIL,
    "VLM-free-form": (
        "\nWhat do you think is the underlying intention of the speaker's utterance based on the given image?\n"
        "Make sure any possible situation outside of the image SHOULD NOT affect your answer.\n"
        "We assume that the speaker wants the listener to take a specific action appropriate to the situation.\n"
        f"Your answer SHOULD NOT exceed 15 words.\n\nUtterance : {UTT}\n\n"
        'Your answer : (Start your sentence with "The speaker wants person1 to...")\n    '
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_prompts_byte_identical(name):
    setting = next(s for s in settings_for(load_eval_config(), get("vague")) if s.name == name)
    prompts = {p.name: load_prompt(p) for p in PROMPTS_DIR.glob("vague_*.yaml")}
    reqs, skipped = rq.build_requests(
        get("vague"), setting, [ITEM], prompts, ModelSpec(name="m", model="m"), Path("/d"), captions={"v1": "CAP"}
    )
    assert not skipped
    assert reqs[0].request.prompt.render(reqs[0].request.variables)[0]["content"] == EXPECTED[name]
    assert reqs[0].n_images == (1 if name.startswith("VLM") else 0)
    assert load_prompt(PROMPTS_DIR / "vague_caption.yaml").user == "Describe the provided image in 2~3 sentences."


def test_accuracy_per_source_and_error_counts():
    # 5 items: VCR right, VCR → SU, Ego4D right, Ego4D → FS, Ego4D unreadable
    types = [None, "SU", None, "FS", None]
    p = pd.DataFrame(
        {
            "setting": "VLM",
            "item_id": [f"i{k}" for k in range(5)],
            "variant": 0,
            "task": "mcq",
            "category": "sarcasm",
            "source_item_id": [f"s{k}" for k in range(5)],
            "status": ["ok", "ok", "ok", "ok", "unparseable"],
            "score": [1.0, 0.0, 1.0, 0.0, 0.0],
            "correct": [True, False, True, False, False],
            "detail": [{"chosen_type": t} if t else {} for t in types],
        }
    )
    items = pd.DataFrame(
        {"item_id": p["item_id"], "labels": [{}] * 5, "source": ["vcr", "vcr", "ego4d", "ego4d", "ego4d"]}
    )
    out = {(r["metric"], r["slice"]): r["value"] for r in score_benchmark(get("vague"), p, items, Scorer(n_boot=0))}
    assert out[("accuracy", "all")] == pytest.approx(0.4)
    assert out[("accuracy", "source=vcr")] == pytest.approx(0.5) and out[("accuracy", "source=ego4d")] == pytest.approx(
        1 / 3
    )
    assert out[("correct_count", "all")] == 2 and out[("errors_SU", "all")] == 1 and out[("errors_FS", "all")] == 1
    assert out[("errors_NE", "all")] == 0 and out[("errors_FS", "source=ego4d")] == 1
