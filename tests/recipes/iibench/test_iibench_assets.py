"""II-Bench assets end to end through the LLM test double, every branch scripted:
trunk filters (duplicate, text ratio), implication keep / drop, human override, label
regeneration, duplicate options → regenerate, distractor also correct → regenerate and,
after K rounds, reject while the passing sibling question is kept."""

import json

import dagster as dg
import pandas as pd
import pytest
from PIL import Image

from forge.storage import TableStore
from forge.storage.contracts import load_contract
from resources.storage import StorageResource
from tests.llm_double.server import message_text

BATCH = "imgs-0000"
DISTRACTORS = [
    "Clocks are fragile household objects.",
    "Summer heat damages old furniture.",
    "Art should mainly be decorative.",
    "Punctuality matters more than rest.",
    "Dreams can predict the future.",
]


def _frames(store: TableStore, tmp_path):
    rows = []
    for name in ["a", "b", "c", "d", "e", "f"]:
        rel = f"media/images/{name}.png"
        (store.data_dir / "media/images").mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (64, 48), (40 * len(rows), 90, 160)).save(store.data_dir / rel)
        rows.append(
            {
                "frame_id": f"img_{name}",
                "batch": BATCH,
                "source": "imgs",
                "item_id": f"it_{name}",
                "clip_id": None,
                "kind": "image",
                "frame_index": 0,
                "timestamp_s": None,
                "path": rel,
                "width": 64,
                "height": 48,
                "blur_var": 10.0,
                "caption": None,
                "sha256": name * 8,
            }
        )
    c = load_contract("frames")
    store.write("frames", c.conform(pd.DataFrame(rows)), BATCH, schema=c.arrow_schema())
    ids = [r["frame_id"] for r in rows]
    store.write(
        "duplicates",
        pd.DataFrame(
            {
                "frame_id": ids,
                "group_id": ids,
                "is_kept": [f != "img_d" for f in ids],
                "kept_frame_id": ["img_a" if f == "img_d" else f for f in ids],
            }
        ),
    )
    store.write(
        "text_ratio",
        pd.DataFrame(
            {
                "frame_id": ids,
                "ratio": [0.5 if f == "img_e" else 0.01 for f in ids],
                "n_boxes": 1,
                "passes": [f != "img_e" for f in ids],
                "text": [f"OCR-{f}" for f in ids],
            }
        ),
        BATCH,
    )


def _q(text, correct, distractors=DISTRACTORS):
    return {"question": text, "correct_answer": correct, "distractors": list(distractors), "nuance": "theme"}


def responder(body):
    name = (body.get("response_format") or {}).get("json_schema", {}).get("name")
    text = message_text(body)
    rounds = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if name == "iibench_implication":
        keep = "OCR-img_a" in text
        return {
            "has_implication": keep,
            "implication": "ALPHA time is wasted" if keep else "",
            "reason": "a melting clock is a visual metaphor" if keep else "a plain product photo",
        }
    if name == "iibench_labels":
        short = "ALPHA" in text and rounds == 0  # first answer for A: explanation too short
        expl = (
            "Too short for the configured minimum of 80 chars."
            if short
            else (
                "EXPL-"
                + ("A" if "ALPHA" in text else "F")
                + " the melting clock shows how time slips away unnoticed while we are busy with our daily work"
            )
        )
        return {
            "image_type": "painting",
            "domain": "life",
            "emotion": "negative",
            "rhetoric": ["metaphor", "symbolism"],
            "difficulty": "middle",
            "explanation": expl,
        }
    if name == "iibench_questions":
        if "EXPL-A" in text:
            if rounds == 0:  # duplicate options → code check → regenerate
                return {
                    "questions": [
                        _q("QA1 what does the clock mean?", "Time slips away.", ["time slips away!"] + DISTRACTORS[1:]),
                        _q("QA2 why is the scene a desert?", "Life feels barren."),
                    ]
                }
            return {
                "questions": [
                    _q("QA1 what does the clock mean?", "Time slips away."),
                    _q(f"QA2 v{rounds} why is the scene a desert?", "Life feels barren."),
                ]
            }
        return {
            "questions": [
                _q("QF1 what is the image about?", "Wasted time."),
                _q(f"QF2 v{rounds} what does the ant mean?", "Decay."),
            ]
        }
    if name == "iibench_distractor_judge":
        ok = [{"distractor": i, "plausible": True, "also_correct": False, "reason": ""} for i in range(1, 6)]
        bad = [dict(d, also_correct=(d["distractor"] == 3), reason="says the same") for d in ok]
        q2_bad = "QF2" in text or "QA2 v1" in text  # A's Q2 is fixed in round 2, F's never is
        return {
            "questions": [
                {"index": 1, "answer_supported": True, "answer_reason": "", "distractors": ok},
                {"index": 2, "answer_supported": True, "answer_reason": "", "distractors": bad if q2_bad else ok},
            ]
        }
    return None


@pytest.fixture
def store(tmp_path):
    s = TableStore(tmp_path / "data")
    _frames(s, tmp_path)
    return s


def _run(store, llm, human_path=None, max_rounds=2):
    from assets.recipes.iibench import assets as A

    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    return dg.materialize(
        [A.iibench_implication, A.iibench_labels, A.iibench_items],
        partition_key=BATCH,
        instance=instance,
        resources={"storage": StorageResource(data_dir=str(store.data_dir)), "llm": llm},
        run_config={
            "ops": {
                "iibench_implication": {"config": {"human_verdicts": human_path}},
                "iibench_labels": {"config": {"min_explanation_chars": 80}},
                "iibench_items": {"config": {"max_rounds": max_rounds}},
            }
        },
    )


def test_iibench_end_to_end_every_branch(store, tmp_path, llm_double, llm_double_resource):
    human = tmp_path / "verdicts.csv"
    human.write_text("id,verdict,note\nimg_c,drop,no implication on inspection\nit_f,keep,ant colony satire\n")
    llm_double.responder = responder
    res = _run(store, llm_double_resource(), str(human))
    assert res.success
    assert all(c.passed for e in res.get_asset_check_evaluations() for c in [e] if e.check_name.startswith("contract_"))

    imp = store.read("iibench_implication").set_index("frame_id")
    assert sorted(imp.index) == ["img_a", "img_b", "img_c", "img_f"]  # d duplicate, e too much text
    assert imp.loc["img_a", "keep"] and imp.loc["img_a", "origin"] == "llm" and imp.loc["img_a", "prompt_hash"]
    assert not imp.loc["img_b", "keep"] and imp.loc["img_b", "reason"] == "a plain product photo"
    assert imp.loc["img_c", "origin"] == "human" and not imp.loc["img_c", "keep"]
    assert imp.loc["img_f", "origin"] == "human" and imp.loc["img_f", "keep"] and imp.loc["img_f", "backend"] == "human"
    judged = [
        message_text(r["body"])
        for r in llm_double.requests
        if r["body"].get("response_format", {}).get("json_schema", {}).get("name") == "iibench_implication"
    ]
    assert len(judged) == 2 and not any("OCR-img_c" in t or "OCR-img_f" in t for t in judged)  # human wins, no call
    asked = [
        message_text(r["body"])
        for r in llm_double.requests
        if r["body"].get("response_format", {}).get("json_schema", {}).get("name") == "iibench_questions"
    ]
    assert asked and all("Write 1 to 3 question(s)" in t for t in asked)  # the paper's count: the writer's choice

    rej = store.read("rejects")
    by = {(r.stage, r.item_id): r for r in rej.itertuples()}
    assert by[("iibench_implication", "img_d")].reason == "duplicate"
    assert by[("iibench_implication", "img_e")].reason == "text_ratio_exceeded"
    assert by[("iibench_implication", "img_b")].reason == "no_implication"
    assert "plain product photo" in by[("iibench_implication", "img_b")].detail
    assert by[("iibench_implication", "img_c")].detail.startswith("[human]")

    labels = store.read("iibench_labels").set_index("frame_id")
    assert labels.loc["img_a", "rounds"] == 1 and labels.loc["img_f", "rounds"] == 0
    assert list(labels.loc["img_a", "rhetoric"]) == ["metaphor", "symbolism"]

    items = store.read("iibench_items")
    qs = sorted(items["question"])
    assert qs == ["QA1 what does the clock mean?", "QA2 v2 why is the scene a desert?", "QF1 what is the image about?"]
    for r in items.itertuples():
        assert len(r.options) == 6 and list(r.option_types).count("correct") == 1
        assert r.options["ABCDEF".index(r.answer)] in ("Time slips away.", "Life feels barren.", "Wasted time.")
        assert json.loads(r.labels)["domain"] == "life" and r.backend == "openai" and r.prompt_hash
    q_rej = rej[(rej["stage"] == "iibench_items")]
    assert list(q_rej["reason"]) == ["distractor_also_correct"] and q_rej.iloc[0]["related_id"] == "img_f"
    att = store.read("llm_attempts")
    a_rounds = att[(att["stage"] == "iibench_items") & (att["item_id"] == "img_a") & (att["step"] == "generate")]
    assert sorted(a_rounds["round"]) == [0, 1, 2]
    assert "options_distinct" in set(att["step"].str.replace("check:", ""))
    md = res.asset_materializations_for_node("iibench_items")[0].metadata
    assert md["questions_rejected"].value == 1 and md["distractor_failure_rate"].value > 0
    checks = {e.check_name: e for e in res.get_asset_check_evaluations()}
    assert all(e.passed for n, e in checks.items() if n.startswith("contract_"))


def test_outdated_prompt_and_rate_checks(store, llm_double, llm_double_resource):
    from assets.recipes.iibench import checks as C

    llm_double.responder = responder
    assert _run(store, llm_double_resource()).success
    st = StorageResource(data_dir=str(store.data_dir))
    assert C.implication_prompt_current(st).passed
    assert C.implication_filter_rate(st).metadata["keep_rate"].value == pytest.approx(1 / 4)
    fail = C.distractor_failure_rate(st).metadata
    assert fail["questions"].value == 2 and fail["failure_rate"].value == 0  # only A is kept without the table
    df = store.read("iibench_implication")
    df.loc[df["origin"] == "llm", "prompt_hash"] = "stale"
    store.write("iibench_implication", df, BATCH)
    res = C.implication_prompt_current(st)
    assert not res.passed and res.metadata["outdated_rows"].value == 4
