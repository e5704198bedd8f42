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
    for pat in ("assets/*/prompts/*.yaml", "assets/recipes/*/prompts/*.yaml", "forge/checks/prompts/*.yaml")
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
