"""The after-recipe half of ``forge/`` is layered in the order the data flows, and no import runs
back up: benchmarks / labelstudio → items → gold → splits → gates → review → export → evals.

Every ``import`` / ``from ... import`` in a layer's files counts, at any depth: inside functions
and under ``if TYPE_CHECKING:`` too (a type-only arrow still couples a lower layer to a higher
one). A synthetic package tree with one upward import shows the test can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Lowest first; packages on one line share a layer. Packages not named here are outside the chain.
LAYERS: list[tuple[str, ...]] = [
    ("benchmarks", "labelstudio"),
    ("items",),
    ("gold",),
    ("splits",),
    ("gates",),
    ("review",),
    ("export",),
    ("evals",),
]


def _rank(layers: list[tuple[str, ...]]) -> dict[str, int]:
    return {pkg: i for i, group in enumerate(layers) for pkg in group}


def _imported(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in a module, at any depth, relative ones resolved."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: -node.level]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out += [(node.lineno, f"{name}.{a.name}" if not node.module else name) for a in node.names]
    return out


def upward_imports(root: Path, layers: list[tuple[str, ...]] = LAYERS) -> list[str]:
    """``file:line: forge.<low> imports forge.<high>`` for every arrow from a lower layer to a higher one."""
    rank = _rank(layers)
    bad: list[str] = []
    for pkg, r in rank.items():
        base = root / "forge" / pkg
        files = sorted(base.rglob("*.py")) if base.is_dir() else [p for p in [base.with_suffix(".py")] if p.is_file()]
        for f in files:
            rel = f.relative_to(root).with_suffix("")
            parts = list(rel.parts[:-1]) if rel.name == "__init__" else list(rel.parts)
            module = ".".join(parts) + (".__init__" if rel.name == "__init__" else "")
            for line, name in _imported(ast.parse(f.read_text(), str(f)), module):
                seg = name.split(".")
                if len(seg) > 1 and seg[0] == "forge" and rank.get(seg[1], -1) > r:
                    bad.append(f"{f.relative_to(root)}:{line}: forge.{pkg} imports {name}")
    return sorted(set(bad))


def test_no_import_runs_back_up():
    assert (ROOT / "forge" / "items").is_dir() and (ROOT / "forge" / "export").is_dir()
    bad = upward_imports(ROOT)
    assert not bad, "a lower layer imports a higher one:\n" + "\n".join(bad)


def test_every_chain_package_exists():
    for pkg in _rank(LAYERS):
        assert (ROOT / "forge" / pkg / "__init__.py").is_file(), pkg


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_an_upward_import_fails(tmp_path):
    root = _tree(
        tmp_path,
        {
            "forge/__init__.py": "",
            "forge/items/__init__.py": "",
            "forge/items/fields.py": "def f():\n    from forge.export.write import write_export\n",
            "forge/export/__init__.py": "",
            "forge/export/write.py": "from forge.items.fields import f\n",
        },
    )
    bad = upward_imports(root, [("items",), ("export",)])
    assert bad == ["forge/items/fields.py:2: forge.items imports forge.export.write"]


def test_type_checking_and_relative_imports_count(tmp_path):
    root = _tree(
        tmp_path,
        {
            "forge/gates/__init__.py": "",
            "forge/gates/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import forge.review.gate\n",
            "forge/review/__init__.py": "",
            "forge/review/gate.py": "from ..gates import a\n",
            "forge/splits/b.py": "from .. import review\n",
        },
    )
    bad = upward_imports(root, [("splits",), ("gates",), ("review",)])
    assert bad == [
        "forge/gates/a.py:3: forge.gates imports forge.review.gate",
        "forge/splits/b.py:1: forge.splits imports forge.review",
    ]


def test_a_downward_import_passes(tmp_path):
    root = _tree(tmp_path, {"forge/export/w.py": "from forge.items import fields\nimport forge.review.gate\n"})
    assert upward_imports(root, [("items",), ("review",), ("export",)]) == []
