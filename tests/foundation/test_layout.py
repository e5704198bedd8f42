"""House rules of the layout (issue #38, tidy).

* ``jobs/`` holds job definitions only (jobs and schedules); command-line programs and their
  support live in ``cli/`` (``python -m cli.build``).
* Only ``cli/dagster_internals.py`` imports private Dagster names (``dagster._...``); every other
  project module uses the public ``dagster`` namespace. Tests may read private names (they pin
  behaviour, as the partition-range tags below).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import dagster as dg

from tests.foundation.test_import_graph import ROOT, project_files

ADAPTER = "cli.dagster_internals"
JOB_KINDS = ("jobs", "schedules")


def private_dagster_imports(tree: ast.AST) -> list[str]:
    """Every private name of a Dagster package (``dagster``, ``dagster_*``) an import names, at any
    depth (``if TYPE_CHECKING:`` included: the dependency is there all the same)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        found += [n for n in names if _private_dagster(n)]
    return sorted(set(found))


def _private_dagster(name: str) -> bool:
    top, *rest = name.split(".")
    private = any(p.startswith("_") and not p.startswith("__") for p in rest)
    return (top == "dagster" or top.startswith("dagster_")) and private


def program_traits(tree: ast.AST) -> list[str]:
    """What makes a module a program rather than a definition: a ``__main__`` guard, argparse."""
    traits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "__name__":
            if any(isinstance(c, ast.Constant) and c.value == "__main__" for c in node.comparators):
                traits.append("__main__ guard")
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "argparse" for a in node.names):
            traits.append("argparse")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "argparse":
            traits.append("argparse")
    return traits


def non_job_definitions(module) -> list[str]:
    """Module-level Dagster definitions of ``module`` that are neither jobs nor schedules (a
    ``Definitions`` counts by what it holds)."""
    out = []
    for name, value in vars(module).items():
        if isinstance(value, dg.Definitions):
            for kind in ("assets", "asset_checks", "sensors", "resources", "loggers", "executor"):
                if getattr(value, kind, None):
                    out.append(f"{name}.{kind}")
        elif isinstance(
            value,
            dg.AssetsDefinition | dg.AssetChecksDefinition | dg.SensorDefinition | dg.LoggerDefinition,
        ) or isinstance(value, dg.ResourceDefinition | dg.ConfigurableResource):
            out.append(name)
    return out


def _job_modules(root: Path = ROOT) -> dict[str, Path]:
    return {name: path for name, path in project_files(root).items() if name.split(".")[0] == "jobs"}


def test_jobs_modules_are_definitions_not_programs():
    modules = _job_modules()
    assert "jobs.stages" in modules, sorted(modules)
    programs = {m: t for m, p in modules.items() if (t := program_traits(ast.parse(p.read_text())))}
    assert not programs, f"jobs/ holds job definitions only; move these programs to cli/: {programs}"
    other = {m: d for m in modules if (d := non_job_definitions(importlib.import_module(m)))}
    assert not other, f"jobs/ defines {JOB_KINDS} only; these belong in assets/, sensors/ or resources/: {other}"


def test_only_the_adapter_imports_private_dagster_names():
    files = project_files()
    found = {m: names for m, p in files.items() if (names := private_dagster_imports(ast.parse(p.read_text())))}
    assert found.pop(ADAPTER, None), f"{ADAPTER} (the one home of private Dagster names) is missing or empty"
    assert not found, f"private Dagster imports outside {ADAPTER} (use dg.* or add the name there, saying why): {found}"


def test_the_checks_can_fail(tmp_path):
    """A program and a private import in a synthetic tree are both caught; public imports are not."""
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "__init__.py").write_text("")
    (tmp_path / "jobs" / "run.py").write_text(
        "import argparse\nfrom dagster._core.errors import DagsterError\n"
        "import dagster_postgres._private as p\nfrom dagster import __version__, _check\n"
        "import dagster as dg\n\nif __name__ == '__main__':\n    argparse.ArgumentParser()\n"
    )
    (tmp_path / "jobs" / "fine.py").write_text("import dagster as dg\nfrom dagster import AssetKey\n")
    modules = _job_modules(tmp_path)
    assert sorted(modules) == ["jobs", "jobs.fine", "jobs.run"]
    run = ast.parse(modules["jobs.run"].read_text())
    assert program_traits(run) == ["argparse", "__main__ guard"]
    assert private_dagster_imports(run) == [
        "dagster._check",
        "dagster._core.errors",
        "dagster._core.errors.DagsterError",
        "dagster_postgres._private",
    ]
    fine = ast.parse(modules["jobs.fine"].read_text())
    assert program_traits(fine) == [] and private_dagster_imports(fine) == []


def test_non_job_definitions_are_named():
    import types

    @dg.asset
    def an_asset() -> None: ...

    module = types.ModuleType("fake_jobs")
    module.job = dg.define_asset_job("a_job")
    module.defs = dg.Definitions(jobs=[module.job], loggers={"x": dg.colored_console_logger})
    module.an_asset = an_asset
    assert non_job_definitions(module) == ["defs.loggers", "an_asset"]


def test_partition_range_tags_are_dagsters():
    """cli.build asks for a single-run backfill with Dagster's own run tags, spelled out (the
    public way); this pins them to Dagster's constants, so an upgrade that renames them fails here."""
    from dagster._core.storage import tags

    from cli import build

    assert build.PARTITION_RANGE_START_TAG == tags.ASSET_PARTITION_RANGE_START_TAG
    assert build.PARTITION_RANGE_END_TAG == tags.ASSET_PARTITION_RANGE_END_TAG
