"""The project's import graph has no cycle, function-level imports included.

Every .py file outside tests/ (and hidden, data and artifact folders) is parsed with ``ast``; every
``import`` / ``from ... import`` in it, at any depth (inside functions too), is an edge to the most
specific project module it names, as import-linter's graph (grimp) draws it: ``from a.b import c``
points at ``a.b.c`` when that is a module, else at ``a.b``; the parent packages a dotted import
executes are not edges. Imports under ``if TYPE_CHECKING:`` are left out: they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP_DIRS = {"tests", "data", "test-artifacts", "__pycache__", "node_modules"}

# Cycles that exist today, each a strongly connected group of modules, listed so that a new cycle
# fails this test and a fixed one must be taken off the list (the test compares exactly).
# None today: keep it empty; a cycle is fixed, not listed.
KNOWN_CYCLES: set[tuple[str, ...]] = set()


def project_files(root: Path = ROOT) -> dict[str, Path]:
    """Module name → file, for every project .py file outside tests/."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if any(p.startswith(".") or p in SKIP_DIRS for p in parts[:-1]):
            continue
        names = list(parts[:-1]) + ([] if parts[-1] == "__init__.py" else [parts[-1][:-3]])
        if names:
            out[".".join(names)] = path
    return out


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, type_checking: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run, at any depth (an ``if TYPE_CHECKING:`` body never does;
    ``type_checking``: those too, the imports a type checker follows)."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        children = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.If) and _type_checking_only(node) and not type_checking:
            children = [c for c in children if c not in node.body]
        stack.extend(children)
    return found


def _resolve(name: str, modules: set[str]) -> str | None:
    """The longest prefix of a dotted name that is a project module."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in modules:
            return candidate
    return None


def import_graph(files: dict[str, Path], type_checking: bool = False) -> dict[str, set[str]]:
    modules = set(files)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(), filename=str(path)), type_checking):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:  # relative: from the package, up level - 1
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                hit = _resolve(target, modules)
                if hit is not None and hit != module:
                    graph[module].add(hit)
    return graph


def cycles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: set[tuple[str, ...]] = set()
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    out.add(tuple(sorted(group)))
    return out


def test_the_finder_sees_function_level_cycles(tmp_path):
    """The test can fail: a cycle closed only by an import inside a function is found; one under
    TYPE_CHECKING is not an import."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.a import x\n    return x\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import d\n")
    (pkg / "d.py").write_text("from . import c\n")
    assert cycles(import_graph(project_files(tmp_path))) == {("pkg.a", "pkg.b")}


def test_no_import_cycles_but_the_known_ones():
    files = project_files()
    assert "forge.llm.engine" in files and "definitions" in files
    found = cycles(import_graph(files))
    new = sorted(found - KNOWN_CYCLES)
    fixed = sorted(KNOWN_CYCLES - found)
    assert not new, f"import cycles (break them; a shared function belongs in a leaf module): {new}"
    assert not fixed, f"these cycles are gone: take them off KNOWN_CYCLES: {fixed}"


# -- logic never imports dagster (docs/conventions.md) ---------------------------------------------

# The Dagster-free layers, per file: the shared library, and in each paper's package its spec, its
# reject table and everything under logic/ (the package's Dagster files sit beside them).
LOGIC_GLOBS = (
    "forge/**/*.py",
    "assets/recipes/*/logic/**/*.py",
    "assets/recipes/*/spec.py",
    "assets/recipes/*/rejects.py",
)


def imports_dagster(path: Path) -> bool:
    for node in _imports(ast.parse(path.read_text(), filename=str(path))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        if any(n == "dagster" or n.startswith(("dagster.", "dagster_")) for n in names):
            return True
    return False


def logic_files(root: Path = ROOT) -> list[Path]:
    return sorted({p for g in LOGIC_GLOBS for p in root.glob(g) if "__pycache__" not in p.parts})


def test_logic_never_imports_dagster_directly_or_through_the_project():
    files = project_files()
    by_path = {p: m for m, p in files.items()}
    logic = logic_files()
    assert len(logic) > 100 and any("/logic/" in str(p) for p in logic)
    direct = [str(p.relative_to(ROOT)) for p in logic if imports_dagster(p)]
    assert not direct, f"Dagster-free files that import dagster: {direct}"
    graph = import_graph(files)
    dagster_modules = {m for m, p in files.items() if imports_dagster(p)}
    through = {}
    for path in logic:
        seen, todo = set(), [by_path[path]]
        while todo:
            m = todo.pop()
            for n in graph[m] - seen:
                seen.add(n)
                todo.append(n)
        if seen & dagster_modules:
            through[str(path.relative_to(ROOT))] = sorted(seen & dagster_modules)[:3]
    assert not through, f"Dagster-free files that reach dagster through project modules: {through}"


def test_the_dagster_rule_can_fail(tmp_path):
    (tmp_path / "a.py").write_text("def f():\n    import dagster as dg\n    return dg\n")
    (tmp_path / "b.py").write_text("from dagster_shared import x\n")
    (tmp_path / "c.py").write_text("import pandas\n")
    assert [imports_dagster(tmp_path / n) for n in ("a.py", "b.py", "c.py")] == [True, True, False]
