"""II-Bench parity with the official repository (II-Bench/II-Bench: eval.py, infer/data_loader.py,
config/*.yaml). Labels and prompt bytes below were derived by reading that code; docs/evals.md
lists the rules with their source lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from assets.recipes.iibench.logic.evaluation import extract_iibench
from assets.recipes.iibench.logic.scoring import iibench_accuracy_values
from assets.recipes.iibench.spec import SPEC
from forge.benchmarks.registry import get
from forge.evals import requests as rq
from forge.evals.config import ModelSpec, load_eval_config, settings_for
from forge.evals.scoring import Scorer, score_benchmark
from forge.llm.prompts import load_prompt

PROMPTS_DIR = SPEC.eval.prompts_dir

OPTS = ["A cat sleeps.", "A dog barks.", "Birds fly south.", "Fish swim.", "Cows graze.", "Pigs oink."]

# (reply, label eval.py gives; None = "miss")
CASES = [
    ("A", "A"),
    ("(B)", "B"),
    ("F\n### .", "F"),  # bare letter on the first line, other lines after
    ("(D) A bee.", "D"),  # "(X)" wins over the article "A"
    ("A bee.", "A"),  # no "(X)": the article is a standalone capital A
    ("The answer is C.", "C"),
    ("Answer: C. A person waits.", "A"),  # C and A once each: the tie goes to the later one
    ("c", "A"),  # no capital letter; "c" occurs inside option A's text
    ("(A) or (B)", "B"),
    ("(A) (A) (B)", "A"),  # most frequent
    ("I think B, but (C) is better", "C"),  # any "(X)" hides the bare letters
    ("Options A and B are wrong; D is right", "D"),
    ("E. Cows graze.", "E"),
    ("**B**", "B"),
    ("Answer:B", "B"),
    ("AB", None),
    ("G", None),  # only A–F are letters; no option contains "G"
    ("Fish swim.", "D"),  # option text found in the reply
    ("Cows graze. Pigs oink.", "F"),  # several option texts: the last option
    ("I can't decide.", None),
    ("The correct option is (F).", "F"),
    ("\u24b6", None),
    ("Answer: (E)\nExplanation: option A is wrong", "E"),
    ("A. A cat sleeps.", "A"),
    ("B) A dog barks.", "A"),  # "B)" is not "(B)": B and A tie, A appears later
    ("D\n\nBecause A cat sleeps", "A"),
    ("(d)", None),  # case is not folded
    ("(A)(B)(B)", "B"),
    ("C C A", "C"),
    (" ", "F"),  # not "": parsed; " " occurs in every option → last
    ("A-B", "B"),
    ("Option_A", None),  # "_" is a word character: no boundary
    ("E.g. the cat", "E"),
    ("sleeps", "A"),  # the whole reply occurs inside option A
    ("(G) (A)", "A"),
]


@pytest.mark.parametrize("reply,label", CASES)
def test_official_label(reply, label):
    e = extract_iibench(reply, OPTS)
    assert (e.letters[0] if e.ok else None) == label


def test_table_is_large_enough_and_empty_reply_is_not_parsed():
    assert len(CASES) >= 30
    assert extract_iibench("", OPTS).reason == "empty" and extract_iibench(None, OPTS).reason == "empty"


# -- prompts: the official data_loader concatenation, byte for byte ---------------------------

INSTR = (
    "Instruction: Please try to answer the single-answer multiple choice question below based on the picture provided."
)
ITEM = {
    "item_id": "q1",
    "benchmark": "iibench",
    "task": "mcq",
    "question": "What is implied?",
    "options": OPTS,
    "answer": "B",
    "media_paths": ["img/q1.jpg"],
    "source_item_id": "i1",
    "labels": {"domain": "Life", "emotion": "Negative", "rhetoric": ["Metaphor", "Contrast"]},
}
DEV = [
    {
        "item_id": f"d{k}",
        "benchmark": "iibench",
        "task": "mcq",
        "question": f"Dev question {k}?",
        "options": [f"dev{k} opt{j}" for j in range(6)],
        "answer": "ABC"[k],
        "media_paths": [f"img/d{k}.jpg"],
        "source_item_id": f"s{k}",
    }
    for k in range(3)
]


def _opts(options):
    return "".join(f"({chr(65 + i)}) {o}\n" for i, o in enumerate(options))


def _official(mode: str, shots: list[dict]) -> str:
    q = f"Question: {ITEM['question']}\n"
    if mode in ("none", "cot"):
        instr = INSTR if mode == "none" else INSTR + " Let's think through each option. Let's think step by step."
        tail = "Explanation: \nAnswer:\n" if mode == "cot" else "Answer:\n"
        return instr + "\n" + q + _opts(OPTS) + tail
    if mode in ("domain", "emotion", "rhetoric"):
        kw = ITEM["labels"][mode]
        kw = ",".join(kw) if isinstance(kw, list) else kw
        return (
            "Instruction: Please try to answer the single-answer multiple choice question below based on the "
            "picture and the key words.\n" + f"Key words: {kw}\n" + q + _opts(OPTS) + "Answer:\n"
        )
    n = len(shots)
    instr = "Instruction: Please try to answer the single-answer multiple choice question below based on the " + (
        "example(with answer) and the corresponding picture.\n"
        if n == 1
        else "examples(with answers) and the corresponding pictures.\n"
    )
    blocks = [
        f"Question: {s['question']}\nPicture: <Picture {i}>\n" + _opts(s["options"]) + f"Answer: ({s['answer']})\n"
        for i, s in enumerate(shots, start=1)
    ]
    return instr + "\n".join(blocks) + "\n" + q + f"Picture: <Picture {n + 1}>\n" + _opts(OPTS) + "Answer:\n"


@pytest.mark.parametrize("name", ["none", "1-shot", "2-shot", "3-shot", "cot", "domain", "emotion", "rhetoric"])
def test_prompts_byte_identical(name):
    cfg = load_eval_config()
    setting = next(s for s in settings_for(cfg, get("iibench")) if s.name == name)
    prompts = {p.name: load_prompt(p) for p in PROMPTS_DIR.glob("iibench_*.yaml")}
    spec = ModelSpec(name="m", model="m")
    reqs, skipped = rq.build_requests(get("iibench"), setting, [ITEM], prompts, spec, Path("/data"), dev_items=DEV)
    assert not skipped and len(reqs) == 1
    msgs = reqs[0].request.prompt.render(reqs[0].request.variables)
    assert len(msgs) == 1 and msgs[0]["role"] == "user"
    shots = [d for d in DEV if d["item_id"] in reqs[0].context.get("shots", [])]
    shots.sort(key=lambda d: reqs[0].context["shots"].index(d["item_id"]))
    assert msgs[0]["content"] == _official(name, shots)
    # pictures: the examples' first, the query's last
    assert [Path(i.path).name for i in reqs[0].request.images] == [Path(s["media_paths"][0]).name for s in shots] + [
        "q1.jpg"
    ]


# -- accuracy: every question in the denominator --------------------------------------------


def _preds(statuses, scores, methods):
    n = len(statuses)
    return pd.DataFrame(
        {
            "setting": "none",
            "item_id": [f"i{k}" for k in range(n)],
            "variant": 0,
            "task": "mcq",
            "category": "life",
            "source_item_id": [f"s{k}" for k in range(n)],
            "status": statuses,
            "score": scores,
            "correct": [s == 1.0 for s in scores],
            "parse_method": methods,
            "detail": [{} for _ in range(n)],
        }
    )


def test_api_errors_counted_as_eval_py_counts_them():
    # correct, wrong, miss, API error, empty reply → accuracy 1/5; coverage 4/5 (one API error)
    p = _preds(
        ["ok", "ok", "unparseable", "call_failed", "unparseable"],
        [1.0, 0.0, 0.0, None, 0.0],
        ["iib_word", "iib_word", "miss", None, "empty"],
    )
    items = pd.DataFrame({"item_id": p["item_id"], "labels": [{}] * len(p)})
    rows = {(r["metric"], r["slice"]): r for r in score_benchmark(get("iibench"), p, items, Scorer(n_boot=0))}
    acc = rows[("accuracy", "all")]
    assert acc["value"] == pytest.approx(0.2) and acc["coverage"] == pytest.approx(0.8) and acc["n"] == 5
    assert rows[("error_rate", "all")]["value"] == pytest.approx(0.2)
    assert rows[("miss_rate", "all")]["value"] == pytest.approx(0.2)
    # named option: API errors out of the denominator → 1/4
    v = iibench_accuracy_values(p, {"iibench_exclude_api_errors": True})
    assert np.nanmean(v) == pytest.approx(0.25)


# -- keyword modes against the official loader's rule, from an imported official record -------

RECORD = {
    "local_path": "images/test/test-9.jpg",
    "questions": [
        {
            "id": "test-9",
            "question": "What does the picture imply?",
            "options": [f"Reading {k} of the picture." for k in range(1, 7)],
            "correct_option": "Reading 2 of the picture.",
            "answer": "B",
        }
    ],
    "meta_data": {
        "image_type": ["Single-panel Comic"],
        "difficulty": "Middle",
        "domain": "Others",
        "emotion": "Neutral",
        "rhetoric": ["Visual Dislocation", "Exaggerate", "Others"],
        "explanation": "A made-up record in the release's shape.",
    },
}


def official_keywords(meta: dict, mode: str) -> str:
    """infer/data_loader.py, domain / emotion / rhetoric modes: meta_data[mode] as the release
    spells it, a list joined with "," (no space)."""
    value = meta[mode]
    return ",".join(value if isinstance(value, list) else [value])


@pytest.mark.parametrize("mode", ["domain", "emotion", "rhetoric"])
def test_keywords_are_the_release_spelling_of_an_imported_record(mode, tmp_path):
    import json

    from assets.recipes.iibench.logic.release import parse_release
    from forge.releases.config import ReleaseInfo

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test.json").write_text(json.dumps([RECORD]))
    info = ReleaseInfo("iibench", "iibench-kw", tmp_path, "v1", "x", "en", options={"require_media": False})
    items = parse_release(info).items.to_dict("records")
    assert len(items) == 1 and json.loads(items[0]["labels"])["domain"] == "other"  # stored canonical
    item = {**items[0], "labels": json.loads(items[0]["labels"]), "media_paths": ["img/q.jpg"]}
    setting = next(s for s in settings_for(load_eval_config(), get("iibench")) if s.name == mode)
    prompts = {p.name: load_prompt(p) for p in PROMPTS_DIR.glob("iibench_*.yaml")}
    reqs, skipped = rq.build_requests(
        get("iibench"), setting, [item], prompts, ModelSpec(name="m", model="m"), tmp_path
    )
    assert not skipped
    text = reqs[0].request.prompt.render(reqs[0].request.variables)[0]["content"]
    assert f"\nKey words: {official_keywords(RECORD['meta_data'], mode)}\n" in text
