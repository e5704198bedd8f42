"""Prompts as files: one YAML file per prompt, loaded and rendered by this module.

File format::

    name: vimu_generate_qa            # required, [A-Za-z0-9_-]
    version: 2                        # optional, informative (the hash is what counts)
    variables: [transcript, evidence] # every {{placeholder}} must be declared here
    system: |
      You write hint-free questions ...
    user: |
      Transcript: {{transcript}}
      Evidence: {{evidence}}
    examples:                         # optional few-shot turns (user / assistant pairs)
      - user: "Transcript: ..."
        assistant: {"question": "...", "answer": "..."}
    schema:                           # JSON Schema the reply must satisfy (optional)
      type: object
      required: [question, answer]
      properties: {question: {type: string}, answer: {type: string}}
    params: {temperature: 0.2}        # optional generation parameters
    language: it                      # optional ISO 639-1 code of the prompt's text (the offline
                                      # stub answers in it); absent = English

``prompt.hash`` is the content hash of the file plus the parser version, so editing a
prompt (or changing how prompts are parsed) changes every hash derived from it. Rendering
is a tiny ``{{name}}`` substitution: no expressions, no attribute access, and a missing
variable raises instead of rendering an empty string.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from forge.storage.yaml_files import parse_yaml

PROMPT_PARSER_VERSION = "1"
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class PromptError(ValueError):
    """A prompt file is malformed or a render is missing a variable."""


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, indent=None)
    return str(value)


def render_template(template: str, variables: dict[str, Any], where: str = "template") -> str:
    """Substitute ``{{name}}`` placeholders; a missing variable raises ``PromptError``."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in variables or variables[name] is None:
            raise PromptError(f"{where}: variable {name!r} missing")
        return _as_text(variables[name])

    return _PLACEHOLDER.sub(sub, template)


def placeholders(template: str) -> set[str]:
    return set(_PLACEHOLDER.findall(template or ""))


@dataclass(frozen=True)
class Prompt:
    name: str
    system: str
    user: str
    variables: tuple[str, ...] = ()
    examples: tuple[dict[str, Any], ...] = ()
    schema: dict[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    version: str | None = None
    strict: bool = False  # OpenAI strict json_schema (schema must be strict-compatible)
    language: str = "en"  # ISO 639-1 code of the prompt's text
    hash: str = ""
    path: Path | None = field(default=None, compare=False)

    def render(
        self, variables: dict[str, Any] | None = None, images: list[Any] | None = None, images_first: bool = False
    ) -> list[dict[str, Any]]:
        """Chat messages: system, few-shot turns, then the user turn.

        ``images`` (``ImageInput``s) are attached to the user turn as data-URL parts, after the
        text, or before it with ``images_first`` (a paper's official order, ``user_parts``),
        encoded with default settings; the engine does its own (configured, cached) encoding
        with the same ``user_parts`` and calls ``render`` without images.
        """
        variables = dict(variables or {})
        missing = [v for v in self.variables if v not in variables or variables[v] is None]
        if missing:
            raise PromptError(f"prompt {self.name}: variables missing: {missing}")
        msgs: list[dict[str, Any]] = []
        if self.system:
            msgs.append({"role": "system", "content": render_template(self.system, variables, f"{self.name}.system")})
        for i, ex in enumerate(self.examples):
            msgs.append(
                {
                    "role": "user",
                    "content": render_template(_as_text(ex["user"]), variables, f"{self.name}.examples[{i}]"),
                }
            )
            msgs.append({"role": "assistant", "content": _as_text(ex["assistant"])})
        user = render_template(self.user, variables, f"{self.name}.user")
        if images:
            from forge.llm.images import ImageEncoder

            enc = ImageEncoder()
            parts = user_parts([{"type": "text", "text": user}], [enc.part(img) for img in images], images_first)
            msgs.append({"role": "user", "content": parts})
        else:
            msgs.append({"role": "user", "content": user})
        return msgs

    @property
    def schema_name(self) -> str:
        return self.name


def user_parts(
    text_parts: list[dict[str, Any]], image_parts: list[dict[str, Any]], images_first: bool = False
) -> list[dict[str, Any]]:
    """The user turn's content parts in order: the images after the text, or before it."""
    return image_parts + text_parts if images_first else text_parts + image_parts


def parse_prompt(doc: dict[str, Any], raw: bytes, path: Path | None = None) -> Prompt:
    where = str(path) if path else "<prompt>"
    if not isinstance(doc, dict):
        raise PromptError(f"{where}: not a mapping")
    for key in ("name", "user"):
        if key not in doc:
            raise PromptError(f"{where}: {key!r} is required")
    name = str(doc["name"])
    if not _NAME.match(name):
        raise PromptError(f"{where}: name {name!r} must match {_NAME.pattern}")
    unknown = set(doc) - {
        "name",
        "version",
        "description",
        "system",
        "user",
        "variables",
        "examples",
        "schema",
        "params",
        "strict",
        "language",
    }
    if unknown:
        raise PromptError(f"{where}: unknown keys {sorted(unknown)}")
    variables = tuple(doc.get("variables") or ())
    used = placeholders(doc.get("system", "")) | placeholders(doc["user"])
    for ex in doc.get("examples") or ():
        if not isinstance(ex, dict) or "user" not in ex or "assistant" not in ex:
            raise PromptError(f"{where}: each example needs 'user' and 'assistant'")
        used |= placeholders(_as_text(ex["user"]))
    undeclared = used - set(variables)
    if undeclared:
        raise PromptError(f"{where}: placeholders not declared in 'variables': {sorted(undeclared)}")
    schema = doc.get("schema")
    if schema is not None:
        import jsonschema

        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise PromptError(f"{where}: invalid schema: {exc.message}") from exc
    digest = hashlib.sha256(PROMPT_PARSER_VERSION.encode() + b"\0" + raw).hexdigest()[:16]
    return Prompt(
        name=name,
        system=str(doc.get("system") or ""),
        user=str(doc["user"]),
        variables=variables,
        examples=tuple(doc.get("examples") or ()),
        schema=schema,
        params=dict(doc.get("params") or {}),
        version=None if doc.get("version") is None else str(doc["version"]),
        strict=bool(doc.get("strict", False)),
        language=str(doc.get("language") or "en"),
        hash=digest,
        path=path,
    )


def load_prompt(path: str | Path) -> Prompt:
    path = Path(path)
    raw = path.read_bytes()
    try:
        doc = parse_yaml(raw)
    except yaml.YAMLError as exc:
        raise PromptError(f"{path}: invalid YAML: {exc}") from exc
    return parse_prompt(doc, raw, path)


def load_prompts(folder: str | Path) -> dict[str, Prompt]:
    """Every ``*.yaml`` prompt in ``folder``, by name."""
    out: dict[str, Prompt] = {}
    for p in sorted(Path(folder).glob("*.y*ml")):
        prompt = load_prompt(p)
        if prompt.name in out:
            raise PromptError(f"prompt name {prompt.name!r} defined twice in {folder}")
        out[prompt.name] = prompt
    return out


def prompt_files_hash(paths: list[str | Path] | tuple[str | Path, ...]) -> str:
    """One hash over several prompt files (order-insensitive), for an asset's code_version."""
    h = hashlib.sha256(PROMPT_PARSER_VERSION.encode())
    for p in sorted(Path(x) for x in paths):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]
