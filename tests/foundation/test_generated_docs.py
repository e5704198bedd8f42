"""The docs' generated parts (scripts/gen_docs.py) match the code: the house drawing in
docs/conventions.md and the spec-field tables in docs/benchmarks.md. Synthetic documents and a
synthetic spec dataclass show the check fails when a block and the code part ways, and that a
field without a comment, or a package without a docstring, stops the generator."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


def test_the_generated_docs_match_the_code():
    assert gen.stale() == [], "run: .venv/bin/python scripts/gen_docs.py"


def test_the_house_names_every_forge_package_on_its_floor():
    drawing = gen.house()
    for n, floor in enumerate(gen.LAYERS, 1):
        assert f"{n:>2} {floor[0]}/ " in drawing, floor  # the floor's number before its first package
        for pkg in floor[1:]:
            assert f"   {pkg}/ " in drawing, pkg
    assert " 1 storage/" in drawing and f"{len(gen.LAYERS)} console/" in drawing


def test_a_changed_floor_order_makes_the_house_stale():
    swapped = [gen.LAYERS[1], gen.LAYERS[0], *gen.LAYERS[2:]]
    blocks = {"house": ("docs/conventions.md", lambda: gen.house(gen.ROOT, swapped))}
    assert gen.stale(blocks=blocks) == ["docs/conventions.md: the generated block 'house' differs from the code"]


def test_a_stale_block_is_found_and_rewritten_alone(tmp_path):
    doc = tmp_path / "page.md"
    doc.write_text("# Page\n\nby hand\n<!-- generated: t -->\nold\n<!-- /generated -->\nafter, by hand\n")
    blocks = {"t": ("page.md", lambda: "new\n")}
    assert gen.stale(tmp_path, blocks) == ["page.md: the generated block 't' differs from the code"]
    assert gen.write(tmp_path, blocks) == ["page.md: t"]
    assert doc.read_text() == "# Page\n\nby hand\n<!-- generated: t -->\nnew\n<!-- /generated -->\nafter, by hand\n"
    assert gen.stale(tmp_path, blocks) == []


def test_a_missing_marker_is_an_error(tmp_path):
    (tmp_path / "page.md").write_text("# Page\n")
    with pytest.raises(ValueError, match="no marker <!-- generated: t -->"):
        gen.stale(tmp_path, {"t": ("page.md", lambda: "x\n")})


def _spec_module(tmp_path: Path, monkeypatch, name: str, body: str):
    path = tmp_path / f"{name}.py"
    path.write_text("from dataclasses import dataclass, field\n\n\n" + body)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, mod)  # inspect.getsource finds the class through its module
    spec.loader.exec_module(mod)
    return mod


SPEC = '''@dataclass(frozen=True)
class Toy:
    """A toy spec."""

    name: str  # the toy's name
    # the sizes, by split
    # (None: the config's)
    sizes: dict[str, int] | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)  # {COMMENT}
'''


def test_a_field_table_reads_types_defaults_and_comments(tmp_path, monkeypatch):
    mod = _spec_module(tmp_path, monkeypatch, "toy_spec_a", SPEC.replace("{COMMENT}", "labels | kinds"))
    assert gen.field_table(mod.Toy).splitlines() == [
        "| field | type | default | what |",
        "|---|---|---|---|",
        "| `name` | `str` | `required` | the toy's name |",
        "| `sizes` | `dict[str, int] \\| None` | `None` | the sizes, by split (None: the config's) |",
        "| `tags` | `tuple[str, ...]` | `()` | labels \\| kinds |",
    ]


def test_a_changed_field_comment_makes_the_table_stale(tmp_path, monkeypatch):
    before = _spec_module(tmp_path, monkeypatch, "toy_spec_b", SPEC.replace("{COMMENT}", "the tags"))
    (tmp_path / "spec.md").write_text(f"<!-- generated: f -->\n{gen.field_table(before.Toy)}<!-- /generated -->\n")
    after = _spec_module(tmp_path, monkeypatch, "toy_spec_c", SPEC.replace("{COMMENT}", "the labels"))
    blocks = {"f": ("spec.md", lambda: gen.field_table(after.Toy))}
    assert gen.stale(tmp_path, blocks) == ["spec.md: the generated block 'f' differs from the code"]


def test_a_field_without_a_comment_stops_the_generator(tmp_path, monkeypatch):
    mod = _spec_module(tmp_path, monkeypatch, "toy_spec_d", SPEC.replace("  # {COMMENT}", ""))
    with pytest.raises(ValueError, match="Toy: fields without a comment: tags"):
        gen.field_table(mod.Toy)


def test_a_package_without_a_docstring_stops_the_generator(tmp_path):
    (tmp_path / "forge" / "bare").mkdir(parents=True)
    (tmp_path / "forge" / "bare" / "__init__.py").write_text("X = 1\n")
    with pytest.raises(ValueError, match="forge/bare/__init__.py has no docstring"):
        gen._floors(tmp_path, [("bare",)], "")


def test_every_spec_dataclass_has_its_table():
    tables = gen.spec_fields()
    for name in ("BenchmarkSpec", "EvalSpec", "ReviewSpec", "HumanStep", "StepField", "Control", "GoldRules"):
        assert f"#### `{name}`" in tables, name
    assert "| `human_steps` |" in tables and "| `paper` |" in tables and "| `member_answers` |" in tables
