"""What the docs name must exist: the checker behind tests/foundation/test_docs_truth.py.

A document here is README.md, every page of docs/, each paper's README (assets/recipes/<paper>/)
and the modules that write the dataset card's text (``forge/**/card.py``). In each, these must hold:

* a relative Markdown link points at a file or folder that exists;
* a repository path in backticks (it starts with one of the repository's top-level folders)
  exists; ``path::test_name`` also names a test that the file defines; ``path/module.attr``
  (a dotted name after a module path) names something the module defines;
* ``make <target>`` (in backticks or a code block) names a target of the Makefile, and
  ``python -m <module>`` a module of the repository (third-party tools aside);
* a ``SUBTEXT_*`` setting is read somewhere in the code (not only in the docs).

Paths of the papers' official repositories are not this repository's: a line that says
"official" (or names the official repository as ``owner/name``) is not checked for paths.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOP = tuple(
    f"{d}/"
    for d in (
        "assets",
        "forge",
        "config",
        "docs",
        "tests",
        "scripts",
        "cli",
        "sensors",
        "resources",
        "jobs",
        "data_contracts",
        "perf",
        "benchmarks",
        ".ci",
        ".gpu",
    )
)
CODE_DIRS = ("forge", "assets", "cli", "sensors", "resources", "jobs", "scripts", "definitions.py", "Makefile", ".ci")
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
MAKE = re.compile(r"\bmake ([a-z][a-z0-9-]*)\b")
MODULE = re.compile(r"\bpython -m ([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)")
THIRD_PARTY = {"pytest", "pip", "venv", "dagster", "ruff", "http"}
SETTING = re.compile(r"\bSUBTEXT_[A-Z0-9_]*[A-Z0-9]\b(?!_?<)")
OFFICIAL = re.compile(r"official|[A-Za-z0-9-]+/[A-Za-z0-9_.-]+-[A-Za-z0-9_.-]+,")
PLACEHOLDER = set("<*{$[|")


@dataclass(frozen=True)
class Problem:
    doc: str
    line: int
    kind: str  # link | path | test | module | make | setting
    what: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.kind} {self.what!r} does not exist"


def documents(root: Path = ROOT) -> list[Path]:
    return [
        root / "README.md",
        *sorted((root / "docs").glob("*.md")),
        *sorted((root / "assets" / "recipes").glob("*/README.md")),
        *sorted(root.glob("forge/**/card.py")),  # the dataset card's text is written there
    ]


def make_targets(root: Path = ROOT) -> set[str]:
    text = (root / "Makefile").read_text()
    return {m.group(1) for m in re.finditer(r"^([a-z][a-z0-9-]*)\s*:", text, re.M)}


def dynamic_settings(code: str) -> list[re.Pattern[str]]:
    """Settings the code names by pattern (``f"SUBTEXT_LLM_{name.upper()}"``) as regexes."""
    out = []
    for m in re.finditer(r"SUBTEXT_[A-Z0-9_]*\{[^}]*\}[A-Z0-9_]*", code):
        parts = re.split(r"\{[^}]*\}", m.group(0))
        out.append(re.compile("^" + "[A-Z0-9_]+".join(map(re.escape, parts)) + "$"))
    return out


def code_text(root: Path = ROOT) -> str:
    parts = []
    for name in CODE_DIRS:
        p = root / name
        files = (
            [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file() and f.suffix in {".py", ".sh", ".yaml", ""}]
        )
        parts += [f.read_text(errors="replace") for f in files if "__pycache__" not in f.parts]
    # the test run's own settings (SUBTEXT_TEST_*) are read by its fixtures and helpers, not by test bodies
    parts += [
        f.read_text(errors="replace") for f in sorted((root / "tests").rglob("*.py")) if not f.name.startswith("test_")
    ]
    return "\n".join(parts)


def _path_problem(root: Path, word: str) -> str | None:
    """None when ``word`` (a repository path, maybe with ``::test`` or ``.attr``) exists."""
    path, _, test = word.partition("::")
    path = path.rstrip(".,:;")
    target = root / path
    if not target.exists():
        module, dot, attr = path.rpartition(".")
        py = root / f"{module}.py"
        if dot and py.is_file() and re.search(rf"\b{re.escape(attr)}\b", py.read_text()):
            return None
        return "path"
    name = test.split("[")[0].split("(")[0]
    if name and target.is_file() and not re.search(rf"\bdef {re.escape(name)}\b", target.read_text()):
        return "test"
    return None


def _words(code: str) -> Iterator[str]:
    for word in code.split():
        word = word.strip("(),;'\"")
        if word.startswith(TOP) and not PLACEHOLDER & set(word):
            yield word


def check(doc: Path, root: Path = ROOT, targets: set[str] | None = None, code: str | None = None) -> list[Problem]:
    targets = make_targets(root) if targets is None else targets
    code = code_text(root) if code is None else code
    patterns = dynamic_settings(code)
    rel = str(doc.relative_to(root)) if doc.is_relative_to(root) else str(doc)
    out: list[Problem] = []
    fenced = False
    for n, line in enumerate(doc.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        spans = [line] if fenced else [m.group(1) for m in CODE.finditer(line)]
        for m in LINK.finditer(line):
            t = m.group(1)
            if re.match(r"^[a-z]+:", t) or t.startswith("#") or PLACEHOLDER & set(t):
                continue
            if not (doc.parent / t.split("#")[0]).exists():
                out.append(Problem(rel, n, "link", t))
        if not OFFICIAL.search(line):
            for m in CODE.finditer(line):
                for word in _words(m.group(1)):
                    kind = _path_problem(root, word)
                    if kind:
                        out.append(Problem(rel, n, kind, word))
        for mod in {m.group(1) for span in spans for m in MODULE.finditer(span)} - THIRD_PARTY:
            base = root / mod.replace(".", "/")
            if not (base.with_suffix(".py").is_file() or (base / "__main__.py").is_file()):
                out.append(Problem(rel, n, "module", mod))
        made = [m.group(1) for span in spans for m in MAKE.finditer(span)]  # `make x`, not prose
        out += [Problem(rel, n, "make", t) for t in made if t not in targets]
        for m in SETTING.finditer(line):
            name = m.group(0)
            if name not in code and not any(p.match(name) for p in patterns):
                out.append(Problem(rel, n, "setting", name))
    return out
