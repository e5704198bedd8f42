"""A MAIA pool as a unit (assets.recipes.maia.logic.pool_flow) through the LLM test double: 8 independent
annotator requests, regeneration with feedback, then a fresh draw (same persona, new seed), a
member failing every draw kept and flagged for review (never dropping its pool), checks that fail
closed, and every prompt's own foil example through the foil checks."""

import re
from pathlib import Path

import pytest
import yaml

from assets.recipes.maia.logic import pool_flow as PF
from assets.recipes.maia.logic.foils import minimal_edit_check
from forge.benchmarks.settings import recipe_settings
from forge.llm.prompts import load_prompt
from forge.llm.types import LLMRequest
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


PERSONAS = None


def annotator(body) -> int:
    """Which annotator a request is (by its persona: a redraw keeps the persona, not the seed)."""
    text = message_text(body)
    return next(i for i, p in enumerate(PERSONAS) if p in text)


def responder(bad: int | None = None, contradiction_fails: bool = False):
    """Annotator i answers ANSWERS[i]; annotator ``bad`` answers off topic every time."""

    def reply(body):
        name = name_of(body)
        if name == "maia_answers":
            i = annotator(body)
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
    global PERSONAS
    cfg = recipe_settings("maia", "paper")
    PERSONAS = PF.personas_for(cfg["answers"]["personas"], "en")
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
    variables = {"evidence": "(see frames)"}
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
        if name_of(body) == "maia_answers" and annotator(body) == 3 and regenerated(body):
            return Reply.json({"answer": ANSWERS[3]})
        return base(body)

    llm_double.responder = reply
    out = build(flow)
    assert out.status == "kept" and out.pool.kept_texts() == ANSWERS and not out.review
    assert out.regenerated[3] == 1 and out.n_inconsistent == 1 and not out.reseeded
    assert all(out.regenerated[i] == 0 for i in range(8) if i != 3)


def test_member_failing_its_rounds_is_drawn_again_same_persona_new_seed(flow, llm_double):
    """Annotator 3 misreads on its own seed, feedback or not; a fresh draw (seed 3 + 8) answers."""
    base = responder()

    def reply(body):
        if name_of(body) == "maia_answers" and annotator(body) == 3 and int(body["seed"]) == 3:
            return Reply.json({"answer": "BANANA split tastes great."})
        return base(body)

    llm_double.responder = reply
    out = build(flow)
    assert out.status == "kept" and out.pool.kept_texts() == ANSWERS and not out.review
    assert out.reseeded == {3: 1}
    assert [m[:2] for m in out.member_rejects] == [("q1_a3", "inconsistent_answer")]  # the discarded draw
    redraw = [b for b in sent(llm_double) if name_of(b) == "maia_answers" and int(b["seed"]) == 11]
    assert len(redraw) == 1 and PERSONAS[3] in message_text(redraw[0]) and not regenerated(redraw[0])


def test_member_failing_every_draw_is_flagged_and_the_pool_kept(flow, llm_double):
    llm_double.responder = responder(bad=5)
    out = build(flow)
    rounds, reseeds = int(flow[2]["regenerate_rounds"]), int(flow[2]["reseed_attempts"])
    assert out.status == "kept" and out.reason is None
    assert len(out.pool.kept_texts()) == 8 and out.pool.texts[5] == "BANANA split tastes great."
    assert set(out.review) == {5} and out.review[5].startswith("inconsistent_answer")
    assert out.member_review(5).startswith("inconsistent_answer") and out.member_review(0) is None
    assert [m[:2] for m in out.member_rejects] == [("q1_a5", "inconsistent_answer")] * reseeds
    tries = [b for b in sent(llm_double) if name_of(b) == "maia_answers" and annotator(b) == 5]
    assert len(tries) == (rounds + 1) * (reseeds + 1)  # bounded: rounds with feedback, per draw
    assert sorted({int(b["seed"]) for b in tries}) == [5 + 8 * k for k in range(reseeds + 1)]


def test_contradiction_check_failure_keeps_the_pool_flagged(flow, llm_double):
    llm_double.responder = responder(contradiction_fails=True)
    out = build(flow)
    assert out.status == "kept" and len(out.pool.kept_texts()) == 8
    assert out.pool_review and out.pool_review[0].startswith("contradiction_check_failed")
    assert "judge unavailable" in out.pool_review[0]
    assert all(out.member_review(i).startswith("contradiction_check_failed") for i in range(8))


def test_contradicting_member_is_regenerated_then_redrawn_then_flagged(flow, llm_double):
    """contradicting_answers: regenerate (not the paper's step) asks the named answer again."""
    base = responder()

    def reply(body):
        if name_of(body) == "maia_pool_contradiction":
            return Reply.json({"contradiction": True, "conflicting": [2]})
        return base(body)

    llm_double.responder = reply
    engine, prompts, acfg, pcfg = flow
    flow = (engine, prompts, {**acfg, "contradicting_answers": "regenerate"}, pcfg)
    out = build(flow)
    rounds, reseeds = int(flow[2]["regenerate_rounds"]), int(flow[2]["reseed_attempts"])
    assert out.status == "kept" and len(out.pool.kept_texts()) == 8
    assert set(out.review) == {1} and out.review[1].startswith("pool_contradiction")
    tries = [b for b in sent(llm_double) if name_of(b) == "maia_answers" and annotator(b) == 1]
    assert len(tries) == 1 + rounds + reseeds  # first draw, feedback rounds, fresh draws
    assert sum(regenerated(b) for b in tries) == rounds and {int(b["seed"]) for b in tries} == {1, 25, 33}
    assert [m[:2] for m in out.member_rejects] == [("q1_a1", "pool_contradiction")] * reseeds


def test_mixed_pool_takes_the_peoples_answers_first_and_personas_fill_the_rest(flow, llm_double):
    """answers.source: mixed: three people answered, so only annotators 4-8 (personas) are asked;
    under contradicting_answers: regenerate a contradicting person's answer is flagged, never asked
    again, while a contradicting persona's answer is asked again."""
    base = responder()
    people = ["On the left of the oven, by the wall.", "Standing at a counter near the till.", "Behind glass shelves."]

    def reply(body):
        if name_of(body) == "maia_pool_contradiction":  # a person (1) and a persona (6) contradict the rest
            return Reply.json({"contradiction": not regenerated_any(), "conflicting": [1, 6]})
        if name_of(body) == "maia_answers" and regenerated(body):  # the fix: a new answer
            return Reply.json({"answer": "Beside a tall shelf of flour sacks."})
        return base(body)

    def regenerated_any():
        return any(regenerated(b) for b in sent(llm_double) if name_of(b) == "maia_answers")

    llm_double.responder = reply
    engine, prompts, acfg, pcfg = flow
    acfg = {**acfg, "contradicting_answers": "regenerate"}
    reqs = PF.annotator_requests(Q, prompts.generate, [], {"evidence": "(see frames)"}, PERSONAS, 8)
    out = PF.build_answer_pool(
        engine, "maia_answer_pools", "b1", Q, prompts, acfg, pcfg, requests=reqs, imported=people
    )
    assert out.status == "kept" and out.pool.kept_texts()[:3] == people
    assert out.pool.kept_texts()[3:] == [*ANSWERS[3:5], "Beside a tall shelf of flour sacks.", *ANSWERS[6:]]
    asked = [annotator(b) for b in sent(llm_double) if name_of(b) == "maia_answers"]
    assert sorted(set(asked)) == [3, 4, 5, 6, 7]  # no persona stands in for a person who answered
    assert [annotator(b) for b in sent(llm_double) if name_of(b) == "maia_answers" and regenerated(b)] == [5]
    assert set(out.review) == {0} and out.review[0].startswith("pool_contradiction")  # the person's answer


def test_contradiction_before_fix_is_kept_and_the_setting_can_flag_at_once(flow, llm_double):
    """The first contradiction test is recorded before any fix (the paper's 9.75 % is a share
    before its annotator's fix); with contradicting_answers: adjudicate (the default, the paper's
    step) the named answer is flagged for a person at once and nothing is asked again; the old
    key is refused by name."""
    base = responder()
    calls = {"n": 0}

    def reply(body):
        if name_of(body) == "maia_pool_contradiction":
            calls["n"] += 1
            first = calls["n"] == 1
            return Reply.json({"contradiction": first, "conflicting": [3] if first else []})
        if name_of(body) == "maia_answers" and regenerated(body):  # the fix: a new answer, a new listing
            return Reply.json({"answer": ANSWERS[annotator(body)].rstrip(".") + ", and then it ends."})
        return base(body)

    llm_double.responder = reply
    engine, prompts, acfg, pcfg = flow
    out = build((engine, prompts, {**acfg, "contradicting_answers": "regenerate"}, pcfg))  # regenerated once
    assert out.contradiction_before_fix is True and out.contradiction is False and not out.review
    llm_double.requests.clear()
    calls["n"] = 0
    out = build(flow)  # the default: adjudicate
    assert out.contradiction_before_fix is True and out.contradiction is True
    assert set(out.review) == {2} and out.review[2].startswith("pool_contradiction")
    assert not any(regenerated(b) for b in sent(llm_double) if name_of(b) == "maia_answers")
    with pytest.raises(ValueError, match="regenerate_contradicting_answers is gone"):
        build((engine, prompts, {**acfg, "regenerate_contradicting_answers": True}, pcfg))


def test_answer_in_the_wrong_language_is_redrawn_as_wrong_language(flow, llm_double):
    engine, prompts, acfg, pcfg = flow
    base = responder()

    def reply(body):
        if name_of(body) == "maia_answers" and annotator(body) == 4 and int(body["seed"]) == 4:
            return Reply.json({"answer": "Il cuoco resta vicino al forno a legna e sembra molto stanco."})
        return base(body)

    llm_double.responder = reply
    out = build(flow)
    assert out.status == "kept" and out.pool.kept_texts() == ANSWERS
    assert [m[:2] for m in out.member_rejects] == [("q1_a4", "wrong_language")]
    # the consistency judge never saw the Italian answer: the language check spoke first
    judged = [field(b, "A:") for b in sent(llm_double) if name_of(b) == "maia_consistency"]
    assert not any("forno" in a for a in judged)


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


def test_statement_that_stays_a_question_is_flagged_not_dropped(flow, llm_double):
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
    scfg = {"regenerate_rounds": 1, "reseed_attempts": 1}
    out = PF.build_statement_pool(engine, "maia_statements", "b1", Q, answers, prompts, scfg, pcfg, 8)
    assert out.status == "kept" and len(out.pool.kept_texts()) == 8 and out.pool.texts[2] == "Where is he?"
    assert set(out.review) == {2} and out.review[2].startswith("statement_invalid")
    assert [m[:2] for m in out.member_rejects] == [("q1_s2", "statement_invalid")]  # the first draw
    tries = [b for b in sent(llm_double) if name_of(b) == "maia_statement" and ANSWERS[2] in message_text(b)]
    assert len(tries) == 4 and {b.get("seed") for b in tries} == {None, 8}  # 2 rounds x 2 draws


def test_pool_without_any_text_is_rejected(flow, llm_double):
    llm_double.responder = lambda body: Reply.error(400, "scripted: down") if name_of(body) == "maia_answers" else None
    out = build(flow)
    assert out.status == "rejected" and out.reason == "pool_too_small"


def _statement_flow(flow):
    engine, prompts, _, pcfg = flow
    prompts = PF.PoolPrompts(
        generate=load_prompt(PROMPTS / "statement.yaml"),
        rephrase_equal=prompts.rephrase_equal,
        rephrase_overlap=prompts.rephrase_overlap,
    )
    answers = [{"idx": i, "answer": a} for i, a in enumerate(ANSWERS)]
    return lambda: PF.build_statement_pool(
        engine, "maia_statements", "b1", Q, answers, prompts, {"reseed_attempts": 1}, pcfg, 8
    )


def test_statement_in_the_wrong_language_is_drawn_again_as_wrong_language(flow, llm_double):
    def reply(body):
        if name_of(body) == "maia_statement":
            a = field(body, "A:")
            if ANSWERS[6] in a and "seed" not in body:  # the first draw comes back in Italian
                return Reply.json({"statement": "Lo chef resta vicino all'ingresso della pizzeria."})
            return Reply.json({"statement": f"The chef is {a.lower()}"})
        return None

    llm_double.responder = reply
    out = _statement_flow(flow)()
    assert out.status == "kept" and not out.review and len(out.pool.kept_texts()) == 8
    assert [m[:2] for m in out.member_rejects] == [("q1_s6", "wrong_language")]


def test_statement_pool_without_any_text_is_rejected(flow, llm_double):
    llm_double.responder = lambda body: (
        Reply.error(400, "scripted: down") if name_of(body) == "maia_statement" else None
    )
    out = _statement_flow(flow)()
    assert out.status == "rejected" and out.reason == "pool_too_small"
    assert {m[1] for m in out.member_rejects} == {"llm_failed"}  # the discarded first draws


def test_pool_source_under_each_setting():
    from assets.recipes.maia.logic.protocol import pool_source

    three = ["a", "b", "c"]
    assert pool_source("personas", three, 8) is None
    assert pool_source("people", three, 8) == three  # a short pool keeps its gaps
    assert pool_source("people", [], 8) == []
    assert pool_source("mixed", three, 8) == three  # personas fill slots 4-8
    assert pool_source("mixed", [], 8) is None  # nobody answered: the personas' pool
    assert pool_source("mixed", [str(i) for i in range(9)], 8) == [str(i) for i in range(8)]
    with pytest.raises(ValueError, match="answers.source"):
        pool_source("crowd", three, 8)
