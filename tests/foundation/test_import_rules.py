"""Two more rules of the import graph (issue #47, "Names that explain themselves").

* No circle even through imports made for annotations only (``if TYPE_CHECKING:``): the data type a
  protocol returns is declared beside the protocol (forge/models/protocols.py: ``OCRResult``,
  ``Heard``), the image a request carries beside its encoder (forge/llm/images.py), so the modules
  that use them import downwards only.
* ``cli/`` stays on top: the programs (``python -m cli.build``) run the code location from outside,
  so nothing of the location (definitions.py, assets/, jobs/, sensors/, resources/) or of forge/
  imports them. Only what sits above them may: cli/ itself, the performance scripts (perf/), tests.
"""

from __future__ import annotations

from tests.foundation.test_import_graph import cycles, import_graph, project_files

TOP = ("cli", "perf")  # the programs; tests/ is not part of the graph


def cli_importers(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Module below the top → the cli modules it imports."""
    out = {}
    for module, targets in graph.items():
        hits = sorted(t for t in targets if t.split(".")[0] == "cli")
        if hits and module.split(".")[0] not in TOP:
            out[module] = hits
    return out


def test_no_circle_even_through_type_only_imports():
    found = cycles(import_graph(project_files(), type_checking=True))
    assert not found, f"import circles through annotation-only imports (put the type beside its protocol): {found}"


def test_nothing_below_cli_imports_it():
    graph = import_graph(project_files(), type_checking=True)
    assert "cli.build" in graph and "definitions" in graph
    found = cli_importers(graph)
    assert not found, f"cli/ stays on top: move what these import from cli/ down (forge/, sensors/): {found}"


def test_the_rules_can_fail(tmp_path):
    """A circle closed only under TYPE_CHECKING is found (and only when those imports count); a
    sensor importing cli/ inside a function is caught, a performance script is not."""
    for package, files in {
        "pkg": {
            "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n",
            "b.py": "from pkg import a\n",
        },
        "cli": {"tool.py": "X = 1\n"},
        "sensors": {"s.py": "def f():\n    from cli.tool import X\n    return X\n"},
        "perf": {"p.py": "import cli.tool\n"},
    }.items():
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        for name, text in files.items():
            (tmp_path / package / name).write_text(text)
    files = project_files(tmp_path)
    assert cycles(import_graph(files, type_checking=True)) == {("pkg.a", "pkg.b")}
    assert cycles(import_graph(files)) == set()
    assert cli_importers(import_graph(files, type_checking=True)) == {"sensors.s": ["cli.tool"]}
