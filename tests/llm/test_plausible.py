"""The plausible test model answers every prompt the project sends with schema-valid JSON (or,
by design, an unparseable reply / refusal), varies its replies and repeats them per request."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from forge.llm.prompts import load_prompt
from tests.llm_double.plausible import Plausible
from tests.llm_double.server import Reply

ROOT = Path(__file__).resolve().parents[2]
PROMPTS = sorted(
    p
    for pat in (
        "assets/*/prompts/*.yaml",
        "assets/recipes/*/prompts/*.yaml",
        "assets/recipes/*/eval_prompts/*.yaml",
        "forge/checks/prompts/*.yaml",
    )
    for p in ROOT.glob(pat)
)


def _body(prompt, k: int) -> dict:
    variables = {v: f"value {k} of {v}" for v in prompt.variables}
    msgs = [
        {
            "role": "user",
            "content": f"Caption: My boss is a shark.\nC: The man waits near the door.\n"
            f"Objects extracted from the image (exactly): cup, chair\n"
            f"Valid letters: A, B, C. Reply.\n{json.dumps(variables)} {k}",
        }
    ]
    rf = (
        {"type": "json_schema", "json_schema": {"name": prompt.name, "schema": prompt.schema, "strict": True}}
        if prompt.schema
        else None
    )
    return {"model": "m", "messages": msgs, **({"response_format": rf} if rf else {})}


@pytest.mark.parametrize("path", PROMPTS, ids=lambda p: p.stem)
def test_every_prompt_gets_schema_valid_varied_replies(path):
    prompt = load_prompt(path)
    model = Plausible(seed=3)
    replies, bad = [], 0
    for k in range(40):
        out = model(_body(prompt, k))
        if isinstance(out, Reply) and not prompt.schema:
            assert out.content and out.content.strip()  # free-text prompts get text
            continue
        if isinstance(out, Reply):
            if out.content is None or not out.content.lstrip().startswith(("{", "[")):
                bad += 1  # scripted unparseable reply / refusal, or free text
                continue
            out = json.loads(out.content)
        if isinstance(out, str):
            continue
        if prompt.schema:
            jsonschema.validate(out, prompt.schema)
        assert "[stub]" not in json.dumps(out)
        replies.append(json.dumps(out, sort_keys=True))
    assert bad <= 8 and (len(replies) >= 30 or not prompt.schema)
    if prompt.schema and len(json.dumps(prompt.schema)) > 200:  # rich schemas: replies vary
        assert len(set(replies)) > 1, prompt.name
    assert model(_body(prompt, 0)) == Plausible(seed=3)(_body(prompt, 0))  # seeded per request


def test_doomed_and_stubborn_items_keep_their_fate_across_repairs_and_feedback():
    """The first item of a prompt is refused on every request (repair turns included), the next one
    always gets the flaw; a third item is answered normally; another prompt has its own budget."""
    prompt = load_prompt(ROOT / "assets/recipes/maia/prompts/questions.yaml")
    model = Plausible(seed=3, p_flaw=0.0, p_unparseable=0.0, p_refusal=0.0, doomed={"maia_*": 1}, stubborn=1)
    doomed, stubborn, free = (_body(prompt, k) for k in (1, 2, 3))
    repair = [
        {"role": "assistant", "content": "{broken"},
        {"role": "user", "content": "Your reply could not be used: invalid JSON. Reply again with only a JSON object."},
    ]
    assert isinstance(model(doomed), Reply)
    assert isinstance(model(doomed | {"messages": doomed["messages"] + repair}), Reply)  # still refused
    for body in (stubborn, stubborn | {"messages": stubborn["messages"] + repair}):
        out = model(body)
        assert out["question_a"].startswith(("Is ", "Why, though?", "What does the person say")) or (
            out["question_a"].split()[:4] == out["question_b"].split()[:4]
        )
    assert not isinstance(model(free), Reply)
    # the same user turn under another system message (MAIA: one clip, another category) is another item
    other = {"role": "system", "content": "Category: spatial"}
    assert not isinstance(model(doomed | {"messages": [other] + doomed["messages"]}), Reply)
    assert model.counts[("maia_questions", "doomed")] == 2
    assert model.counts[("maia_questions", "flaw")] == 2 and model.counts[("maia_questions", "good")] == 2


def test_a_contrary_annotator_keeps_contradicting_its_pool():
    """p_contrary: annotator 6 of such a question gives the opposite reading, also after feedback,
    and the contradiction judge names it every time (the recipe then rejects the pool whole)."""
    from tests.llm_double.plausible import CONTRARY, Plausible

    model = Plausible(seed=1, p_contrary=1.0, p_flaw=0.0, p_unparseable=0.0, p_refusal=0.0)
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    body = {
        "seed": 6,
        "messages": [
            {"role": "system", "content": "You are a nurse."},
            {"role": "user", "content": "Question: Where is he?"},
        ],
        "response_format": {"type": "json_schema", "json_schema": {"name": "maia_answers", "schema": schema}},
    }
    assert model(body)["answer"] == CONTRARY  # a good reply is the JSON object itself
    listing = f"Question: Where is he?\nA1: Next to the oven.\nA2: {CONTRARY}"
    verdict_schema = {"type": "object", "properties": {"contradiction": {"type": "boolean"}}}
    cbody = {
        "messages": [{"role": "user", "content": listing}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "maia_pool_contradiction", "schema": verdict_schema},
        },
    }
    got = model(cbody)
    assert got == {"contradiction": True, "conflicting": [2]}
