"""ViMU's open-ended judge reads what the official judge reads (scripts/01-vimu_oe_judge.py):
question, gold answer, literal summary, intended meaning, evidence and rubric, then the prediction."""

from __future__ import annotations

import json
from pathlib import Path

from assets.recipes.vimu.logic.items import build_items
from assets.recipes.vimu.logic.scoring import judge_variables
from forge.llm.prompts import load_prompt
from tests.recipes.vimu.test_items import QUESTION, TAX, annotation

JUDGE = Path(__file__).resolve().parents[3] / "assets" / "recipes" / "vimu" / "eval_prompts" / "vimu_oe_judge.yaml"
EVIDENCE = [{"source": "Visual frames", "cue": "he rolls his eyes"}, {"source": "On-screen text", "cue": "MONDAY"}]


def test_judge_gets_literal_summary_and_evidence():
    ann = {**annotation(), "literal_content": "A man praises a meeting in an office.", "evidence": EVIDENCE}
    items, _ = build_items(TAX, ann, QUESTION, prompt_hash="h")
    oe = next(i for i in items if i["category"] == "OE")
    extra = json.loads(oe["extra"])
    assert extra["literal_summary"] == "A man praises a meeting in an office." and extra["evidence"] == EVIDENCE
    v = judge_variables({"status": "ok", "parsed": "He mocks the boss."}, oe)
    assert v["literal_summary"] == "A man praises a meeting in an office."
    assert json.loads(v["evidence"]) == EVIDENCE and json.loads(v["reference_points"]) == ["boss", "fool"]
    prompt = load_prompt(JUDGE)
    assert set(prompt.variables) == set(v)
    text = "\n".join(m["content"] for m in prompt.render(v) if isinstance(m["content"], str))
    for label in ("Question:", "Gold Answer:", "Literal Summary:", "Intended Meaning:", "Evidence:", "Rubric:"):
        assert label in text
    assert "he rolls his eyes" in text and "A man praises a meeting" in text
    # evidence stored as a JSON string (as read back from Parquet) is the same list
    ann2 = {**ann, "evidence": json.dumps(EVIDENCE)}
    oe2 = next(i for i in build_items(TAX, ann2, QUESTION, prompt_hash="h")[0] if i["category"] == "OE")
    assert json.loads(oe2["extra"])["evidence"] == EVIDENCE


def test_items_without_them_still_judge():
    """Imported releases without a literal summary or evidence: the judge says none, it still runs."""
    v = judge_variables({"status": "ok", "parsed": "x"}, {"question": "q", "answer": "a", "extra": "{}"})
    assert v["literal_summary"] == "(none)" and v["evidence"] == "[]"


def test_questions_in_another_language_are_wrong_language_before_the_hint_check():
    from assets.recipes.vimu.logic import questions as qs
    from forge.llm.refine import RefineOutcome, RefineRun, Verdict
    from forge.storage import RejectLog

    lang, hint = qs.qa_checks(["sarcasm", "sarcastic"])
    italian = {
        "question": "Qual è il messaggio sarcastico del video, secondo te?",
        "answer": "Che le riunioni sono inutili.",
    }
    v = lang(None, italian)
    assert v.source == "wrong_language" and v.label == "major"
    assert hint(None, italian) is None  # the hint check never reads text in another language
    english = {"question": "What is the sarcastic message of the video?", "answer": "Meetings are useless."}
    assert lang(None, english) is None and hint(None, english).source == "hint_leak"
    # a pair still in another language after the rounds is rejected wrong_language, others refine_<reason>
    wrong = RefineOutcome("c1", "rejected", None, None, Verdict("major", "x", "wrong_language"), 3, "max_rounds")
    other = RefineOutcome("c2", "rejected", None, None, Verdict("major", "y", "hint_leak"), 3, "max_rounds")
    log = RejectLog("vimu_questions", "b1")
    qs.add_rejects(RefineRun("vimu_questions", "b1", [wrong, other]), log)
    assert {(r["item_id"], r["reason"]) for r in log.rows} == {("c1", "wrong_language"), ("c2", "refine_max_rounds")}
