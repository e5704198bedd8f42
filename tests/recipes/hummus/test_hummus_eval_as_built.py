"""Hummus evaluation as the paper ran it: the §6.2 Classification prompt variants are evaluation
settings (Yes (involved) / No (not), No or Yes, A or B with a per-item random order), and the
§6.1 random Classification baseline (100 iterations) is scored next to every setting."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from PIL import Image

from assets.recipes.hummus.logic import evaluation as E
from assets.recipes.hummus.logic.items import question
from assets.recipes.hummus.logic.scoring import random_baseline, random_f1
from forge.benchmarks.registry import get
from forge.evals.config import ModelSpec, settings_for
from forge.evals.requests import build_requests, parse_reply
from forge.evals.scorers import f1_per_class
from forge.evals.scoring import Scorer
from forge.llm.prompts import load_prompt

ROOT = Path(__file__).resolve().parents[3]
PROMPT = load_prompt(ROOT / "assets" / "recipes" / "hummus" / "eval_prompts" / "hummus_task.yaml")


def _items():
    out = []
    for k, task in enumerate(["classification"] * 6 + ["naming"]):
        out.append(
            {
                "item_id": f"hum_{k}",
                "benchmark": "hummus",
                "task": task,
                "category": "Yes" if k % 2 == 0 else "No",
                "question": question(task, f"Caption number {k}."),
                "options": ["Yes", "No"] if task == "classification" else None,
                "answer": "A" if k % 2 == 0 else "B",
                "media_paths": ["img.png"],
                "source_item_id": f"s{k}",
            }
        )
    return out


def _settings():
    cfg = yaml.safe_load((ROOT / "config" / "evals.yaml").read_text())
    return {s.name: s for s in settings_for(cfg, get("hummus"))}


@pytest.fixture
def data(tmp_path):
    Image.new("RGB", (20, 10)).save(tmp_path / "img.png")
    return tmp_path


def _requests(setting, data):
    spec = ModelSpec(name="m", model="m", accepts="image")
    prompts = {"hummus_task.yaml": PROMPT}
    return build_requests(get("hummus"), setting, _items(), prompts, spec, data, seed="eval")


def test_the_three_section_6_2_prompts_are_settings(data):
    s = _settings()
    assert {"clas_yes_no_explained", "clas_no_or_yes", "clas_a_or_b"} <= set(s)
    reqs, skipped = _requests(s["clas_no_or_yes"], data)
    assert len(reqs) == 6 and skipped == [("hum_6", "classification_only_setting")]
    text = reqs[0].request.variables["question"]
    assert text.endswith("Answer the question with No or Yes.") and "Yes or No" not in text
    yn = _requests(s["clas_yes_no_explained"], data)[0][0].request.variables["question"]
    assert "Yes (i.e., metaphor use is involved) or No (i.e., metaphor use is not involved)" in yn
    # the Table 1 setting is unchanged
    assert _requests(s["multimodal"], data)[0][0].request.variables["question"].endswith("with Yes or No.")


def test_a_or_b_order_is_random_per_item_and_read_back_as_yes_no(data):
    reqs, _ = _requests(_settings()["clas_a_or_b"], data)
    orders = [tuple(r.context["ab_order"]) for r in reqs]
    assert set(orders) == {("pos", "neg"), ("neg", "pos")}  # randomised per item (seeded)
    assert orders == [tuple(r.context["ab_order"]) for r in _requests(_settings()["clas_a_or_b"], data)[0]]
    for r in reqs:
        q = r.request.variables["question"]
        assert q.endswith("Answer the question with A or B.")
        letter_of_pos = "AB"[r.context["ab_order"].index("pos")]
        assert f"{letter_of_pos}. {E.AB_OPTIONS['pos']}" in q
        # "involves" chosen → Yes (the item's A); "does not involve" → No (B)
        assert parse_reply(r, f"{letter_of_pos}", None, get("hummus")).letters == ("A",)
        assert parse_reply(r, "AB".replace(letter_of_pos, ""), None, get("hummus")).letters == ("B",)
        assert not parse_reply(r, "maybe", None, get("hummus")).ok


def test_random_baseline_averages_100_iterations():
    gold = np.array([True, True, True, False, False, True, False, True])
    draws = np.random.default_rng(0).random((100, len(gold))) < 0.5
    got = random_f1(gold, draws, np.ones(len(gold)))
    labels = ["pos" if g else "neg" for g in gold]
    per = [f1_per_class(["pos" if d else "neg" for d in row], labels, ["pos", "neg"]) for row in draws]
    assert got["pos"] == np.mean([p["pos"] for p in per]) and got["neg"] == np.mean([p["neg"] for p in per])
    assert 0.3 < got["avg"] < 0.7
    cls = pd.DataFrame({"source_item_id": [f"s{k}" for k in range(len(gold))]})
    sc = Scorer(n_boot=20)
    random_baseline("multimodal", cls, labels, sc)
    rows = pd.DataFrame(sc.rows)
    assert set(rows["slice"]) == {"baseline=random"} and set(rows["metric"]) == {"f1_pos", "f1_neg", "f1_avg"}
    assert abs(rows.set_index("metric").loc["f1_avg", "value"] - got["avg"]) < 1e-9


def official_clas11(caption: str, first: str, second: str) -> str:
    """The user text of the official model_evaluation/a_or_b.py (prompt CLAS11), rebuilt from its
    rule: the caption line, a blank line, the Classification question, "Choose from the following
    options:", the two options_CLAS11 sentences as A and B in the drawn order, the A-or-B line."""
    stem = "Does the humor of the given image-and-caption combination involve metaphor use?"
    sentence = "The humor of the given image-and-caption combination {} metaphor use."
    opts = {"pos": sentence.format("involves"), "neg": sentence.format("does not involve")}
    return (
        f"Caption: {caption}\n\n{stem} Choose from the following options:\n"
        f"A. {opts[first]}\nB. {opts[second]}\nAnswer the question with A or B."
    )


def test_a_or_b_text_is_the_official_clas11_wording(data):
    reqs, _ = _requests(_settings()["clas_a_or_b"], data)
    assert reqs
    for r in reqs:
        k = int(r.item["item_id"].split("_")[1])
        first, second = r.context["ab_order"]
        assert r.request.variables["question"] == official_clas11(f"Caption number {k}.", first, second)
