"""The parts of the docs that describe the code, generated from the code.

Between ``<!-- generated: NAME -->`` and ``<!-- /generated -->`` in a document, the text is this
script's: ``house`` (docs/conventions.md) draws the repository's top level and ``forge/``'s packages
on their floors (forge/layers.py), each with the summary of its docstring; ``spec-fields``
(docs/benchmarks.md) is one table per spec dataclass (forge/benchmarks/spec.py, review_spec.py,
protocol_spec.py): field, type, default, and the field's comment (the comment lines right above
the field, or the comment at the end of its line: the convention every spec field follows);
``paper-hooks`` (docs/benchmarks.md) is ``PaperHooks``' methods (forge/benchmarks/hooks.py).

    .venv/bin/python scripts/gen_docs.py           # rewrite the blocks
    .venv/bin/python scripts/gen_docs.py --check   # exit 1 and say which block is stale

tests/foundation/test_generated_docs.py runs the check.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import io
import re
import subprocess
import sys
import textwrap
import tokenize
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from forge.layers import LAYERS  # noqa: E402  (after the path: run as a script)

BLOCK = re.compile(r"(<!-- generated: (?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- /generated -->)", re.S)
SPEC_MODULES = ("forge.benchmarks.spec", "forge.benchmarks.review_spec", "forge.benchmarks.protocol_spec")

# Top-level entries that are not Python packages (a package says what it is in its docstring).
# A tracked top-level folder in neither place stops the generator: place it here.
TOP_LEVEL = {
    "workspace.yaml": "the single loader (make ui, dg, cli.build all load definitions.py)",
    "config/": "YAML the user edits: sources, vision, splits, evals, review, releases, models, weights;"
    " per-benchmark blocks here only override a paper's own files",
    "data_contracts/": "contracts of the shared tables (a paper's own are in its contracts/)",
    "docs/": "one page per concern (this one: docs/conventions.md)",
    "tests/": "pytest, mirroring the tree; a paper's tests (its human steps and review rules too) and release"
    " fixtures in tests/recipes/<paper>/;"
    " tests/llm_double/ is the OpenAI-compatible double",
    "perf/": "performance scripts that print numbers over the whole job",
    "scripts/": "set-up and maintenance scripts (scripts/gen_docs.py writes the generated parts of the docs)",
}
WIDTH = 110  # the drawing's lines wrap here
ORDER = ("assets", "resources", "jobs", "sensors", "cli", "data_contracts", "config", "forge", "tests", "perf")


def summary(doc: str | None, where: str) -> str:
    """The docstring's first sentence on one line (PEP 257's summary), `code` in single backticks."""
    if not doc or not doc.strip():
        raise ValueError(f"{where} has no docstring: its first sentence is its line in the drawing")
    para = " ".join(inspect.cleandoc(doc).split("\n\n")[0].split()).replace("``", "`")
    return re.split(r"(?<!e\.g\.)(?<!i\.e\.)(?<=[.!?])\s+(?=[A-Z(`])", para)[0].rstrip(".")


def _module_doc(path: Path) -> str | None:
    return ast.get_docstring(ast.parse(path.read_text(), str(path)))


def _tracked_top(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout
    names = {line.split("/")[0] + ("/" if "/" in line else "") for line in out.splitlines()}
    return sorted(n for n in names if not n.startswith(".") and n.endswith("/"))


def _describe_top(root: Path, name: str) -> str:
    init = root / name / "__init__.py"
    if name in TOP_LEVEL:
        return TOP_LEVEL[name]
    if init.is_file():
        return summary(_module_doc(init), f"{name}__init__.py")
    raise ValueError(f"top-level {name} is not placed: give it a line in scripts/gen_docs.py TOP_LEVEL")


def _entry(first: str, cont: str, label: str, text: str, col: int) -> list[str]:
    """``first + label`` then ``text`` from column ``col``, wrapped; continuation lines start ``cont``."""
    head = f"{first}{label}"
    pad = max(col, len(head) + 1)
    lines = textwrap.wrap(text, WIDTH - pad, break_on_hyphens=False) or [""]
    return [f"{head:<{pad}}{lines[0]}"] + [f"{cont:<{pad}}{line}" for line in lines[1:]]


def house(root: Path = ROOT, layers: list[tuple[str, ...]] = LAYERS) -> str:
    """The drawing: the top level, the stage packages of assets/, the papers, forge/ floor by floor."""
    tops = sorted(_tracked_top(root), key=lambda n: (ORDER.index(n[:-1]) if n[:-1] in ORDER else len(ORDER), n))
    lines = _entry("", "", "definitions.py", summary(_module_doc(root / "definitions.py"), "definitions.py"), 22)
    lines += _entry("", "", "workspace.yaml", TOP_LEVEL["workspace.yaml"], 22) + ["│"]
    for i, name in enumerate(tops):
        last = i == len(tops) - 1
        bar = "    " if last else "│   "
        sub = name in ("assets/", "forge/")
        lines += _entry("└── " if last else "├── ", bar + ("│" if sub else ""), name, _describe_top(root, name), 22)
        if name == "assets/":
            lines += _assets(root, bar)
        elif name == "forge/":
            lines += _floors(root, layers, bar)
    return "```\n" + "\n".join(lines) + "\n```\n"


def _assets(root: Path, bar: str) -> list[str]:
    groups = sorted(p.parent.name for p in (root / "assets").glob("*/__init__.py") if p.parent.name != "recipes")
    out: list[str] = []
    for g in groups:
        doc = summary(_module_doc(root / "assets" / g / "__init__.py"), f"assets/{g}")
        out += _entry(f"{bar}├── ", f"{bar}│", f"{g}/", doc, 22)
    recipes = root / "assets" / "recipes"
    out += _entry(f"{bar}└── ", f"{bar}    │", "recipes/", summary(_module_doc(recipes / "__init__.py"), "recipes"), 22)
    papers = sorted(p.parent.name for p in recipes.glob("*/spec.py"))
    out += _entry(f"{bar}    └── ", "", "<paper>/", f"one paper = one folder ({', '.join(papers)}): below", 22)
    return out


def _floors(root: Path, layers: list[tuple[str, ...]], bar: str) -> list[str]:
    out = [f"{bar}│   floors, lowest first: a package imports only from the floors below (forge/layers.py)"]
    for n, floor in enumerate(layers, 1):
        top = n == len(layers)
        for j, pkg in enumerate(floor):
            doc = summary(_module_doc(root / "forge" / pkg / "__init__.py"), f"forge/{pkg}/__init__.py")
            first = bar + (("└── " if top else "├── ") if j == 0 else ("    " if top else "│   "))
            label = (f"{n:>2} " if j == 0 else "   ") + f"{pkg}/"
            out += _entry(first, bar + ("    " if top else "│   "), label, doc, 26)
    return out


# --- spec-field tables ---------------------------------------------------------------------------


def _comments(source: str) -> dict[int, str]:
    """Line (1-based) → the comment on it, for every comment of ``source``."""
    toks = tokenize.generate_tokens(io.StringIO(source).readline)
    return {t.start[0]: t.string.lstrip("#").strip() for t in toks if t.type == tokenize.COMMENT}


def _field_nodes(cls: type) -> tuple[dict[str, ast.AnnAssign], dict[int, str], list[str]]:
    source = textwrap.dedent(inspect.getsource(cls))
    body = ast.parse(source).body[0]
    assert isinstance(body, ast.ClassDef)
    nodes = {n.target.id: n for n in body.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    return nodes, _comments(source), source.splitlines()


def field_doc(node: ast.AnnAssign, comments: dict[int, str], lines: list[str]) -> str:
    """The comment lines right above the field, then the comment at the end of its lines."""
    above: list[str] = []
    n = node.lineno - 1
    while n >= 1 and lines[n - 1].lstrip().startswith("#"):
        above.insert(0, comments[n])
        n -= 1
    trailing = [comments[i] for i in range(node.lineno, (node.end_lineno or node.lineno) + 1) if i in comments]
    return " ".join(above + trailing).strip()


def _default(node: ast.AnnAssign) -> str:
    value = node.value
    if value is None:
        return "required"
    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
        kw = {k.arg: k.value for k in value.keywords}
        if "default" in kw:
            return ast.unparse(kw["default"])
        if "default_factory" in kw:
            factory = ast.unparse(kw["default_factory"])
            return {"dict": "{}", "list": "[]", "tuple": "()"}.get(factory, f"{factory}()")
        return "required"
    return ast.unparse(value)


def _cell(text: str) -> str:
    return text.replace("``", "`").replace("|", "\\|")


def field_table(cls: type) -> str:
    """``cls``'s fields as a Markdown table; a field without a comment is an error."""
    nodes, comments, lines = _field_nodes(cls)
    rows = ["| field | type | default | what |", "|---|---|---|---|"]
    missing = []
    for f in dataclasses.fields(cls):
        node = nodes[f.name]
        doc = field_doc(node, comments, lines)
        if not doc:
            missing.append(f.name)
        kind = ast.unparse(node.annotation)  # as written, with or without postponed annotations
        rows.append(f"| `{f.name}` | `{_cell(kind)}` | `{_cell(_default(node))}` | {_cell(doc)} |")
    if missing:
        raise ValueError(f"{cls.__module__}.{cls.__qualname__}: fields without a comment: {', '.join(missing)}")
    return "\n".join(rows) + "\n"


def spec_classes(modules: tuple[str, ...] = SPEC_MODULES) -> list[type]:
    """Every dataclass defined in the spec modules, in module and source order."""
    out: list[type] = []
    for name in modules:
        mod = importlib.import_module(name)
        found = [c for c in vars(mod).values() if dataclasses.is_dataclass(c) and c.__module__ == name]
        out += sorted(found, key=lambda c: inspect.getsourcelines(c)[1])
    return out


def spec_fields(classes: list[type] | None = None) -> str:
    parts = []
    for cls in spec_classes() if classes is None else classes:
        path = Path(inspect.getfile(cls)).resolve().relative_to(ROOT)
        parts.append(f"#### `{cls.__name__}` (`{path}`)\n\n{summary(cls.__doc__, cls.__name__)}.\n\n{field_table(cls)}")
    return "\n".join(parts)


def hooks_table(cls: type | None = None) -> str:
    """``PaperHooks``' methods (a paper's behaviour, forge/benchmarks/hooks.py) as a Markdown table:
    method, its arguments, the first sentence of its docstring (what it does and the shared default)."""
    if cls is None:
        cls = importlib.import_module("forge.benchmarks.hooks").PaperHooks
    rows = ["| method | arguments | what (and the shared behaviour) |", "|---|---|---|"]
    for name, fn in vars(cls).items():
        if name.startswith("_") or not inspect.isfunction(fn):
            continue
        args = ", ".join(p for p in inspect.signature(fn).parameters if p != "self")
        rows.append(f"| `{name}` | `{args}` | {_cell(' '.join((inspect.getdoc(fn) or '').split()))} |")
    return "\n".join(rows) + "\n"


# --- the documents -------------------------------------------------------------------------------

BLOCKS: dict[str, tuple[str, Callable[[], str]]] = {
    "house": ("docs/conventions.md", house),
    "spec-fields": ("docs/benchmarks.md", spec_fields),
    "paper-hooks": ("docs/benchmarks.md", hooks_table),
}


def fill(text: str, blocks: dict[str, str]) -> str:
    """``text`` with every generated block of a name in ``blocks`` replaced by its new body."""
    seen: set[str] = set()

    def put(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in blocks:
            return m.group(0)
        seen.add(name)
        return f"{m.group(1)}{blocks[name]}{m.group(4)}"

    out = BLOCK.sub(put, text)
    if set(blocks) - seen:
        raise ValueError(f"no marker <!-- generated: {', '.join(sorted(set(blocks) - seen))} --> in the document")
    return out


def stale(root: Path = ROOT, blocks: dict[str, tuple[str, Callable[[], str]]] = BLOCKS) -> list[str]:
    """The blocks whose text in their document differs from what the code generates (rewrites nothing)."""
    out = []
    for name, (doc, make) in blocks.items():
        text = (root / doc).read_text()
        if fill(text, {name: make()}) != text:
            out.append(f"{doc}: the generated block {name!r} differs from the code")
    return out


def write(root: Path = ROOT, blocks: dict[str, tuple[str, Callable[[], str]]] = BLOCKS) -> list[str]:
    changed = []
    for name, (doc, make) in blocks.items():
        path = root / doc
        text = path.read_text()
        new = fill(text, {name: make()})
        if new != text:
            path.write_text(new)
            changed.append(f"{doc}: {name}")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when a block is stale")
    args = parser.parse_args(argv)
    if args.check:
        bad = stale()
        print("\n".join(bad) if bad else "generated docs match the code")
        if bad:
            print("run: .venv/bin/python scripts/gen_docs.py", file=sys.stderr)
        return 1 if bad else 0
    changed = write()
    print("\n".join(changed) if changed else "nothing to rewrite")
    return 0


if __name__ == "__main__":
    sys.exit(main())
