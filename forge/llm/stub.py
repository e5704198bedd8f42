"""Schema-valid placeholder outputs, for the offline ``stub`` backend and the test double.

Deterministic per seed (the request's cache key): the same request always gets the same
placeholder. Honours ``type``, ``enum``/``const``, ``required``, ``minItems``/``maxItems``,
``minimum``/``maximum``, ``minLength``/``maxLength``, ``anyOf``/``oneOf`` and local ``$ref``s.
Every string says it came from the stub, so it can never pass for real data.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

STUB_MARK = "[stub]"
STUB_BACKEND = "stub"
# Asset metadata / docs wording of the policy below.
ADVISORY_NOTE = "stub backend: verdicts recorded, not applied"


_FILLER = (
    "amber", "basin", "cedar", "delta", "ember", "fable", "grove", "harbor", "island", "jasper",
    "kernel", "lantern", "meadow", "nectar", "orbit", "pebble", "quartz", "ripple", "saddle", "timber",
    "umber", "velvet", "willow", "xenon", "yonder", "zephyr", "anchor", "bramble", "canyon", "dune",
    "echo", "fjord", "glacier", "hollow", "ivory", "jungle", "kestrel", "lagoon", "marble", "nomad",
    "oasis", "prairie", "quiver", "summit", "tundra", "upland", "valley", "walnut", "yarrow", "zenith",
)  # fmt: skip


# Italian prompts (MAIA's ``language: it``) get Italian filler, so placeholder text reads as the
# language the recipe's checks tokenise.
_FILLER_IT = (
    "ambra", "bacino", "cedro", "delta", "brace", "favola", "bosco", "porto", "isola", "diaspro",
    "nucleo", "lanterna", "prato", "nettare", "orbita", "ciottolo", "quarzo", "onda", "sella", "legname",
    "velluto", "salice", "ancora", "rovo", "canyon", "duna", "eco", "fiordo", "ghiacciaio", "conca",
    "avorio", "giungla", "gheppio", "laguna", "marmo", "nomade", "oasi", "prateria", "faretra", "vetta",
    "tundra", "altopiano", "valle", "noce", "achillea", "zenit", "collina", "fontana", "lucciola", "mulino",
)  # fmt: skip
FILLERS: dict[str, tuple[str, ...]] = {"en": _FILLER, "it": _FILLER_IT}


def _rng(seed: str) -> random.Random:
    return random.Random(int(hashlib.sha256(seed.encode()).hexdigest()[:16], 16))


def placeholder(schema: dict[str, Any] | None, seed: str = "", lang: str = "en") -> Any:
    """A value valid against ``schema`` (``{"text": ...}`` object when there is none); its filler
    words are in ``lang`` (``FILLERS``; English for a language without a list)."""
    if not schema:
        return {"text": f"{STUB_MARK} placeholder"}
    return _gen(schema, _rng(seed), schema, "value", 0, FILLERS.get(lang, _FILLER))


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node[part]
        return _resolve(node, root)
    return schema


def _gen(
    schema: Any, rng: random.Random, root: dict[str, Any], name: str, depth: int, filler: tuple[str, ...] = _FILLER
) -> Any:
    if schema is True or schema == {}:
        return f"{STUB_MARK} {name}"
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(list(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if _resolve(s, root).get("type") != "null"] or schema[key]
            return _gen(options[0], rng, root, name, depth + 1, filler)
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for s in schema["allOf"]:
            merged.update(_resolve(s, root))
        return _gen(merged, rng, root, name, depth + 1, filler)
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), "null")
    if typ is None:
        typ = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if typ == "object":
        props = schema.get("properties", {})
        out = {}
        # Fill every declared property (strict schemas require them all); depth bounds recursion.
        for key, sub in props.items():
            if depth > 8 and key not in schema.get("required", ()):
                continue
            out[key] = _gen(sub, rng, root, key, depth + 1, filler)
        for key in schema.get("required", ()):
            if key not in out:
                out[key] = f"{STUB_MARK} {key}"
        return out
    if typ == "array":
        lo = int(schema.get("minItems", 1 if depth < 6 else 0))
        hi = schema.get("maxItems")
        n = max(lo, min(2, hi) if hi is not None else max(lo, 2 if depth < 6 else 0))
        if hi is not None:
            n = min(n, int(hi))
        items = schema.get("items", {})
        vals = [_gen(items, rng, root, f"{name}_{i}", depth + 1, filler) for i in range(n)]
        if schema.get("uniqueItems") and isinstance(items, dict) and "enum" in _resolve(items, root):
            pool = list(_resolve(items, root)["enum"])
            vals = pool[:n]
        return vals
    if typ == "string":
        fmt = schema.get("format")
        if fmt == "date-time":
            return "2000-01-01T00:00:00Z"
        if fmt == "date":
            return "2000-01-01"
        # Seeded filler words: two requests get different texts (so the demo's items survive
        # dedup) while the same request always gets the same one.
        s = f"{STUB_MARK} {name} " + " ".join(rng.choice(filler) for _ in range(3))
        lo, hi = int(schema.get("minLength", 0)), schema.get("maxLength")
        if len(s) < lo:
            s = s + "x" * (lo - len(s))
        if hi is not None and len(s) > int(hi):
            s = s[: int(hi)]
        return s
    if typ in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        hi = schema.get("maximum", schema.get("exclusiveMaximum", lo + 10))
        if "exclusiveMinimum" in schema and "minimum" not in schema:
            lo = lo + (1 if typ == "integer" else 1e-6)
        if "exclusiveMaximum" in schema and "maximum" not in schema:
            hi = hi - (1 if typ == "integer" else 1e-6)
        if typ == "integer":
            return rng.randint(int(-(-lo // 1)), int(hi // 1)) if hi >= lo else int(lo)
        return round(rng.uniform(lo, hi), 3) if hi >= lo else lo
    if typ == "boolean":
        return rng.random() < 0.5
    if typ == "null":
        return None
    return f"{STUB_MARK} {name}"


def advisory(source: Any) -> bool:
    """The one policy for stub output: its verdicts and checks are recorded but never filter.

    True when ``source`` was made by the offline stub backend, so that any LLM judge verdict
    it carries (ratings, consistency, implication, distractor/structural/NLI judges, refine
    verdicts) and any programmatic check that fails only because the text is a placeholder
    (ambiguity/similarity, duplicate options, overlap, span/box/metaphor format) must be
    *recorded* (what it would have been: a column or an ``llm_attempts`` row) and *not applied*
    (the item is kept). Rows made this way say ``backend='stub'`` and exports refuse them, so
    nothing unjudged can leave the demo. With a real backend this is False and nothing changes.

    ``source`` is a backend name (``"stub"``), an ``LLMResult``/row with ``.backend`` or a
    ``"backend"`` key, or an engine with ``.backend_name``; ``None`` (human/imported) is False.
    """
    if source is None:
        return False
    if isinstance(source, str):
        return source == STUB_BACKEND
    if isinstance(source, dict):
        return source.get("backend") == STUB_BACKEND
    for attr in ("backend_name", "backend"):
        value = getattr(source, attr, None)
        if isinstance(value, str):
            return value == STUB_BACKEND
        if value is not None and isinstance(getattr(value, "name", None), str):
            return value.name == STUB_BACKEND
    return False


class StubOutputError(ValueError):
    """Rows made by the stub backend reached a step that publishes a benchmark."""


TEXT_COLUMNS = ("question", "options", "answer", "references", "labels", "extra")


def has_stub_mark(value: Any) -> bool:
    """True when ``value`` (a string, or a list / array / dict of them) contains stub-made text."""
    if isinstance(value, str):
        return STUB_MARK in value
    if isinstance(value, dict):
        return any(has_stub_mark(v) for v in value.values())
    if hasattr(value, "__iter__") and not isinstance(value, (bytes, bytearray)):
        return any(has_stub_mark(v) for v in value)
    return False


def stub_made(row: Any, column: str = "backend") -> bool:
    """A row made by the stub, or built from anything stub-made: its own label, its ``lineage``
    (every backend behind it, forge/provenance/lineage.py) or the ``[stub]`` mark in its text."""
    from forge.provenance.lineage import touched_by_stub

    get = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
    if get(column) == STUB_BACKEND or touched_by_stub(get("lineage")):
        return True
    return any(has_stub_mark(get(c)) for c in TEXT_COLUMNS)


def ensure_no_stub(rows: Any, column: str = "backend", what: str = "export") -> None:
    """Raise when any row (a DataFrame or iterable of dicts) was made by the ``stub`` backend or
    built from stub-made content (``stub_made``: label, lineage or ``[stub]`` text).

    Exports call this: placeholders keep the demo DAG running, they are never a benchmark.
    """
    records = rows.to_dict("records") if hasattr(rows, "columns") else list(rows)
    n = sum(1 for r in records if stub_made(r, column))
    if n:
        raise StubOutputError(
            f"{what} refused: {n} row(s) were made by (or built from the output of) the "
            "offline stub LLM backend; "
            "configure an endpoint (see docs/llm.md) and re-materialize"
        )
