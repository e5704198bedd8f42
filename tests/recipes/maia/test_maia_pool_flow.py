"""A MAIA pool as a unit (forge.recipes.maia.pool_flow) through the LLM test double: 8 independent
annotator requests, regeneration with feedback, a pool rejected whole when one member keeps
failing, checks that fail closed, and every prompt's own foil example through the foil checks."""

import re
from pathlib import Path

import pytest
import yaml

from forge.llm.prompts import load_prompt
from forge.llm.types import LLMRequest
from forge.recipes.maia import pool_flow as PF
from forge.recipes.maia.foils import minimal_edit_check
from forge.recipes.settings import recipe_settings
from tests.llm_double import Reply
from tests.llm_double.server import message_text

PROMPTS = Path(__file__).resolve().parents[3] / "assets" / "recipes" / "maia" / "prompts"
QUESTION = "Where is the chef standing during the video?"
# eight answers that share (almost) no words: nothing to rephrase
ANSWERS = [
    "Beside the brick oven.",
    "He waits near a wooden counter.",
    "Behind a marble table, close to customers.",
    "Right next to the hot furnace.",
    "Inside the kitchen area.",
    "At his workstation by the window.",
    "Close to the entrance of the pizzeria.",
    "Opposite the door, facing us.",
]
Q = {"question_id": "q1", "question": QUESTION, "batch": "b1"}


def name_of(body):
    return ((body.get("response_format") or {}).get("json_schema") or {}).get("name")


def field(body, prefix):
    for line in reversed(message_text(body).splitlines()):
        if line.strip().startswith(prefix):
            return line.strip()[len(prefix) :].strip()
    return ""


def sent(double):
    return [r["body"] for r in double.requests if r["path"].endswith("/chat/completions")]


def regenerated(body):
    return "A reviewer asked" in message_text(body)


def responder(bad: int | None = None, contradiction_fails: bool = False):
    """Annotator ``seed`` answers ANSWERS[seed]; annotator ``bad`` answers off topic every time."""

    def reply(body):
        name = name_of(body)
        if name == "maia_answers":
            i = int(body["seed"])
            return Reply.json({"answer": "BANANA split tastes great." if i == bad else ANSWERS[i]})
        if name == "maia_consistency":
            return Reply.json({"score": 0 if "BANANA" in field(body, "A:") else 1})
        if name == "maia_pool_contradiction":
            if contradiction_fails:
                return Reply.error(400, "scripted: contradiction judge unavailable")
            return Reply.json({"contradiction": False, "conflicting": []})
        return None

    return reply


@pytest.fixture
def flow(llm_double, llm_double_resource):
    """(engine, prompts, answers cfg, pools cfg) with the paper's settings."""
    cfg = recipe_settings("maia", "paper")
    prompts = PF.PoolPrompts(
        generate=load_prompt(PROMPTS / "answers.yaml"),
        rephrase_equal=load_prompt(PROMPTS / "rephrase_equal.yaml"),
        rephrase_overlap=load_prompt(PROMPTS / "rephrase_overlap.yaml"),
        consistency=load_prompt(PROMPTS / "consistency.yaml"),
        contradiction=load_prompt(PROMPTS / "contradiction.yaml"),
    )
    return llm_double_resource().engine(), prompts, cfg["answers"], cfg["pools"]


def build(flow):
    engine, prompts, acfg, pcfg = flow
    variables = {"category": "spatial total", "definition": "Where things are.", "evidence": "(see frames)"}
    reqs = PF.annotator_requests(
        Q, prompts.generate, [], variables, PF.personas_for(acfg["personas"], "en"), int(acfg["pool_size"])
    )
    return PF.build_answer_pool(engine, "maia_answer_pools", "b1", Q, prompts, acfg, pcfg, requests=reqs)


def test_eight_independent_requests(flow, llm_double):
    llm_double.responder = responder()
    out = build(flow)
    assert out.status == "kept" and out.pool.kept_texts() == ANSWERS
    gen = [b for b in sent(llm_double) if name_of(b) == "maia_answers"]
    assert len(gen) == 8  # one request per annotator, never one request for the pool
    assert sorted(int(b["seed"]) for b in gen) == list(range(8))
    personas = PF.personas_for(recipe_settings("maia", "paper")["answers"]["personas"], "en")
    for b in gen:
        text, i = message_text(b), int(b["seed"])
        assert personas[i] in text and sum(p in text for p in personas) == 1
        # no request sees any answer: each is made before (and without) the others
        assert not any(a.rstrip(".") in text for a in ANSWERS)


def test_failing_answer_is_regenerated_with_feedback(flow, llm_double):
    base = responder(bad=3)

    def reply(body):
        if name_of(body) == "maia_answers" and int(body["seed"]) == 3 and regenerated(body):
            return Reply.json({"answer": ANSWERS[3]})
        return base(body)

    llm_double.responder = reply
    out = build(flow)
    assert out.status == "kept" and out.pool.kept_texts() == ANSWERS
    assert out.regenerated[3] == 1 and out.n_inconsistent == 1
    assert all(out.regenerated[i] == 0 for i in range(8) if i != 3)


def test_pool_rejected_whole_when_one_member_keeps_failing(flow, llm_double):
    llm_double.responder = responder(bad=5)
    out = build(flow)
    rounds = int(flow[2]["regenerate_rounds"])
    assert out.status == "rejected" and out.reason == "pool_too_small"
    assert out.detail.startswith("7/8 valid answers") and "q1_a5: inconsistent_answer" in out.detail
    assert [m[:2] for m in out.member_rejects] == [("q1_a5", "inconsistent_answer")]
    tries = [b for b in sent(llm_double) if name_of(b) == "maia_answers" and int(b["seed"]) == 5]
    assert len(tries) == rounds + 1  # bounded: the first generation and `regenerate_rounds` more
    # nothing of a rejected pool is marked as accepted in the attempt rows
    assert all((df["final_status"] == "rejected").all() for df in PF.pool_final_status(out).attempts if len(df))


def test_contradiction_check_failure_rejects_the_pool(flow, llm_double):
    llm_double.responder = responder(contradiction_fails=True)
    out = build(flow)
    assert out.status == "rejected" and out.reason == "contradiction_check_failed"
    assert "judge unavailable" in out.detail


def test_short_foil_pools():
    recs = [{"statement_id": f"q{q}_s{i}", "question_id": f"q{q}"} for q in (1, 2) for i in range(8)]
    accepted = {r["statement_id"] for r in recs} - {"q2_s4"}
    assert PF.short_pools(recs, accepted, 8) == {"q2": "7/8 valid foils (no valid foil for q2_s4)"}
    assert set(PF.short_pools(recs[:7], set(), 8)) == {"q1"}


# -- every foil prompt's own example passes the recipe's programmatic foil checks --------------
def _foil_prompt_files() -> list[Path]:
    return sorted(p for p in PROMPTS.glob("**/*.yaml") if p.stem.startswith("foil_") and p.stem != "foil_structural")


def test_there_are_foil_prompts():
    assert len([p for p in _foil_prompt_files() if p.parent == PROMPTS]) == 12


@pytest.mark.parametrize("path", _foil_prompt_files(), ids=lambda p: str(p.relative_to(PROMPTS)))
def test_foil_prompt_example_passes_foil_checks(path):
    system = yaml.safe_load(path.read_text())["system"]
    cs = re.findall(r"^\s*C:\s*(.+?)\s*$", system, re.M)
    fs = re.findall(r"^\s*F:\s*(.+?)\s*$", system, re.M)
    assert len(cs) == 1 and len(fs) == 1, f"{path.name}: one C:/F: example expected"
    ratio = float(recipe_settings("maia", "paper")["foils"]["max_edit_ratio"])
    req = LLMRequest(item_id="example", prompt=None, variables={"caption": cs[0]})
    verdict = minimal_edit_check(ratio)(req, {"foil": fs[0]})
    assert verdict is None, f"{path.name}: {verdict}"
    # the example caption is itself a valid true statement (declarative, impersonal)
    assert PF.declarative_statement(req, {"statement": cs[0]}) is None


def test_personas_follow_the_prompt_language():
    personas = recipe_settings("maia", "paper")["answers"]["personas"]
    it, en = PF.personas_for(personas, "it"), PF.personas_for(personas, "en")
    assert len(it) == len(en) == 8 and set(it).isdisjoint(en)
    assert PF.personas_for(["x"], "it") == ["x"]
    with pytest.raises(ValueError, match="no list for language 'fr'"):
        PF.personas_for(personas, "fr")


def test_statement_check_speaks_the_recipe_language():
    req = None
    assert PF.declarative_statement(req, {"statement": "Io vedo un cane."}, "it") is not None
    assert PF.declarative_statement(req, {"statement": "Il cane corre nel parco."}, "it") is None
    assert "domanda" in PF.declarative_statement(req, {"statement": "Il cane corre?"}, "it").feedback


def test_statement_pool_rejected_whole_when_a_statement_stays_a_question(flow, llm_double):
    engine, prompts, _, pcfg = flow
    prompts = PF.PoolPrompts(
        generate=load_prompt(PROMPTS / "statement.yaml"),
        rephrase_equal=prompts.rephrase_equal,
        rephrase_overlap=prompts.rephrase_overlap,
    )
    answers = [{"idx": i, "answer": a} for i, a in enumerate(ANSWERS)]

    def reply(body):
        if name_of(body) == "maia_statement":
            a = field(body, "A:") or message_text(body)
            # the statement of answer 2 comes back as a question every time, feedback or not
            return Reply.json({"statement": "Where is he?" if ANSWERS[2] in a else f"The chef is {a.lower()}"})
        return None

    llm_double.responder = reply
    scfg = {"regenerate_rounds": 1}
    out = PF.build_statement_pool(engine, "maia_statements", "b1", Q, answers, prompts, scfg, pcfg, 8)
    assert out.status == "rejected" and out.reason == "pool_too_small"
    assert [m[:2] for m in out.member_rejects] == [("q1_s2", "statement_invalid")]
    assert out.detail.startswith("7/8 valid statements")
