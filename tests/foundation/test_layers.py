"""Every package of ``forge/`` sits on one floor, and a package imports only from the floors below
it: no import runs back up, and no two packages import each other (no knot). The floors, lowest
first: storage, provenance, llm, models, the checks / scale / labelstudio, vision / media,
benchmarks, then the after-recipe half in the order the data flows: items → releases → gold →
splits → gates → protocol → review → export → evals, and the console on top.

Every ``import`` / ``from ... import`` in a package's files counts, at any depth: inside functions
and under ``if TYPE_CHECKING:`` too (a type-only arrow still couples a lower floor to a higher
one). Packages on one floor are independent: an import between them counts too. Synthetic package
trees with one upward or sideways import show the test can fail; ``test_every_package_has_its_floor``
keeps the list whole (a new package must be placed).
"""

from __future__ import annotations

import ast
from pathlib import Path

from forge.layers import LAYERS  # the one list of floors (scripts/gen_docs.py draws the house from it)

ROOT = Path(__file__).resolve().parents[2]


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
    """``file:line: forge.<low> imports forge.<high>`` for every arrow from a lower layer to a higher one,
    or between two packages of one layer."""
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
                if len(seg) > 1 and seg[0] == "forge" and seg[1] != pkg and rank.get(seg[1], -1) >= r:
                    bad.append(f"{f.relative_to(root)}:{line}: forge.{pkg} imports {name}")
    return sorted(set(bad))


def test_no_import_runs_back_up():
    assert (ROOT / "forge" / "items").is_dir() and (ROOT / "forge" / "export").is_dir()
    bad = upward_imports(ROOT)
    assert not bad, "a lower layer imports a higher one:\n" + "\n".join(bad)


def packages(root: Path) -> set[str]:
    return {p.parent.name for p in (root / "forge").glob("*/__init__.py")}


def test_every_package_has_its_floor():
    named = [pkg for group in LAYERS for pkg in group]
    assert len(named) == len(set(named)), named  # one floor each
    assert set(named) == packages(ROOT), (sorted(packages(ROOT) - set(named)), sorted(set(named) - packages(ROOT)))
    assert len(named) == 20


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


def test_an_import_between_packages_of_one_floor_fails(tmp_path):
    root = _tree(
        tmp_path,
        {
            "forge/checks/text.py": "import forge.scale.pool\n",
            "forge/scale/pool.py": "from forge.models import protocols\n",
            "forge/models/protocols.py": "",
        },
    )
    bad = upward_imports(root, [("models",), ("checks", "scale")])
    assert bad == ["forge/checks/text.py:1: forge.checks imports forge.scale.pool"]


def test_a_knot_fails_whichever_floor_is_lower(tmp_path):
    """Two packages importing each other (storage → benchmarks → storage, as contracts once did
    through the registry inside a function): one of the two arrows runs up, whatever the order."""
    root = _tree(
        tmp_path,
        {
            "forge/storage/contracts.py": "def names():\n    from forge.benchmarks.registry import names\n",
            "forge/benchmarks/registry.py": "from forge.storage.contracts import Contract\n",
        },
    )
    assert upward_imports(root, [("storage",), ("benchmarks",)]) == [
        "forge/storage/contracts.py:2: forge.storage imports forge.benchmarks.registry"
    ]
    assert upward_imports(root, [("benchmarks",), ("storage",)]) == [
        "forge/benchmarks/registry.py:1: forge.benchmarks imports forge.storage.contracts"
    ]
