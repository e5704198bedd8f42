from __future__ import annotations

from pathlib import Path

import pytest

QA_PROMPT = """\
name: qa
version: 1
variables: [text]
system: You write one question about a text.
user: "Text: {{text}}"
examples:
  - user: "Text: the sky is grey"
    assistant: {"question": "What colour is the sky?", "label": "literal", "n": 1}
schema:
  type: object
  additionalProperties: false
  required: [question, label, n]
  properties:
    question: {type: string, minLength: 5}
    label: {enum: [literal, irony, metaphor]}
    n: {type: integer, minimum: 1, maximum: 3}
params: {temperature: 0.2}
"""

JUDGE_PROMPT = """\
name: judge
variables: [question]
system: You review questions.
user: "Question: {{question}}"
schema:
  type: object
  required: [verdict, feedback]
  properties:
    verdict: {enum: [pass, minor, major, reject]}
    feedback: {type: string}
"""


@pytest.fixture
def prompt_dir(tmp_path: Path) -> Path:
    d = tmp_path / "prompts"
    d.mkdir()
    (d / "qa.yaml").write_text(QA_PROMPT)
    (d / "judge.yaml").write_text(JUDGE_PROMPT)
    return d
