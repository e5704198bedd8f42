"""The benchmark registry: every spec is complete, and the shared stages never name a paper."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest
import yaml

from forge.benchmarks import registry
from forge.benchmarks.hooks import PaperHooks
from forge.benchmarks.spec import BenchmarkSpec, BlindAction, BlindUnit, OptionPolicy
from forge.storage.contracts import load_contract

ROOT = Path(__file__).resolve().parents[2]
SPECS = registry.specs()
# The hand-kept list of shared files this test scanned before issue #56 (comments and docstrings too):
# the scan below finds every shared file instead, reads code (prose may cite a paper, as docs do) and
# must cover each of these (test_the_scan_covers_every_shared_file).
SHARED = [
    # the after-recipe chain and the protocol steps serve every paper alike
    *sorted(
        f
        for pkg in ("items", "gold", "splits", "gates", "export", "protocol", "labelstudio")
        for f in (ROOT / "forge" / pkg).glob("*.py")
    ),
    *sorted((ROOT / "assets" / "splits").glob("*.py")),
    ROOT / "forge/evals/config.py",
    ROOT / "forge/evals/pipeline.py",
    ROOT / "forge/evals/requests.py",
    ROOT / "forge/evals/report.py",
    ROOT / "forge/evals/scoring.py",
    ROOT / "forge/evals/scorers.py",
    ROOT / "forge/evals/extract.py",
    ROOT / "forge/evals/bootstrap.py",
    ROOT / "forge/evals/textmetrics.py",
    ROOT / "forge/evals/__init__.py",
    ROOT / "assets/evals/assets.py",
    ROOT / "assets/evals/baselines.py",
    ROOT / "assets/evals/paper_reports.py",
    *sorted((ROOT / "jobs").glob("*.py")),
    ROOT / "definitions.py",
    ROOT / "forge/benchmarks/spec.py",
    ROOT / "assets/recipes/__init__.py",
    ROOT / "assets/recipes/plugins.py",
    ROOT / "forge/benchmarks/settings.py",
    # the central per-paper tables that are gone (#38): each paper's package holds its own
    ROOT / "forge/releases/config.py",
    ROOT / "forge/gold/apply.py",
    ROOT / "tests/foundation/rejects_registry.py",
    *(ROOT / "config" / f"{n}.yaml" for n in ("evals", "splits", "review", "releases")),
    *(
        ROOT / "data_contracts" / f"{t}.yaml"
        for t in ("splits", "gated_items", "gate_results", "exports", "eval_predictions", "eval_scores")
    ),
]
PACKAGES = ROOT / "assets" / "recipes"


def test_builtin_benchmarks_are_registered_once():
    """Each folder under assets/recipes/ with a spec.py is one paper, registered by one line."""
    folders = sorted(p.parent.name for p in PACKAGES.glob("*/spec.py"))
    assert folders and sorted(registry.BUILTIN) == sorted(f"assets.recipes.{n}.spec" for n in folders)
    assert sorted(registry.names()) == folders
    assert len({s.group for s in SPECS}) == len(SPECS)
    assert all(isinstance(s, BenchmarkSpec) for s in SPECS)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_spec_is_complete_and_cites_its_paper(spec):
    doc = importlib.import_module(f"assets.recipes.{spec.name}.spec").__doc__
    assert re.search(r"§\s*\d|App\. [A-Z]|Table \d", doc), "each policy cites its paper section"
    for word in ("Option policy", "Text-only probe"):
        assert word in doc
    assert load_contract(spec.items_table).table == spec.items_table
    readme = PACKAGES / spec.name / "README.md"
    assert spec.home == PACKAGES / spec.name and (ROOT / spec.doc) == readme
    assert readme.is_file() and "spec.py" in readme.read_text()
    for own in (spec.contracts_dir, spec.recipe_config, spec.eval.prompts_dir):
        assert own.exists() and own.is_relative_to(spec.home), own
    assert spec.eval.primary_metric and spec.eval.kinds
    # its behaviour is one hooks object of its own package's hooks.py, rendering and scoring its way
    assert isinstance(spec.hooks, PaperHooks) and type(spec.hooks).__module__ == f"{spec.package}.hooks"
    assert spec.hooks.overrides("build_request") and spec.hooks.overrides("score_setting")


def test_recipe_assets_are_in_the_graph_under_the_spec_group():
    from definitions import build_defs

    graph = build_defs().resolve_asset_graph()
    by_key = {k.to_user_string(): graph.get(k) for k in graph.materializable_asset_keys}
    for spec in SPECS:
        for a in spec.recipe_assets:
            assert by_key[a].group_name == spec.group, a
        for stage in ("splits", "gated", "export", "eval", "eval_report"):
            assert spec.asset(stage) in by_key
        assert spec.items_asset in {k.to_user_string() for k in by_key[spec.asset("splits")].parent_keys}


def test_paper_policies():
    vimu, maia = registry.get("vimu"), registry.get("maia")
    assert vimu.options == OptionPolicy.FIXED and vimu.blind.action == BlindAction.REPORT  # reported, never dropped
    assert (maia.blind.action, maia.blind.unit, maia.split.unit_key) == (
        BlindAction.REPORT,
        BlindUnit.POOL,
        "question_id",
    )
    from forge.splits.config import stage_settings

    assert not stage_settings(registry.get("vimu")).gates.rebalance_positions
    assert stage_settings(registry.get("vague")).gates.rebalance_positions


def test_runtime_registration_is_scoped():
    from dataclasses import replace

    toy = replace(registry.get("vague"), name="vague_copy", group="vague_copy")
    with registry.registered(toy):
        assert registry.get("vague_copy") is toy and "vague_copy" in load_contract("eval_scores").columns[1].allowed()
    assert "vague_copy" not in registry.names()
    with pytest.raises(KeyError):
        registry.get("vague_copy")


def test_tag_benchmark_selects_one_papers_assets_from_recipe_to_report():
    import dagster as dg

    import definitions

    defs = definitions.build_defs()
    graph = defs.resolve_asset_graph()
    maia = {k.to_user_string() for k in dg.AssetSelection.tag("benchmark", "maia").resolve(graph)}
    assert {"maia_questions", "maia_items", "maia_export", "maia_eval", "maia_release"} <= maia
    assert all(k.startswith("maia_") for k in maia)
    assert not {"frames", "detections"} & {
        k.to_user_string() for k in dg.AssetSelection.tag("benchmark", "vimu").resolve(graph)
    }


# --- Every shared file, found (not listed): the code outside the paper packages names no paper ------
# A paper's name in code is its registry name (``maia``) or a name it prefixes (``maia_items``);
# prose (comments, docstrings) may cite a paper as the docs do ("as MAIA measures it"), so the scan
# reads a Python file's names, imports, keywords and string literals other than docstrings, and a
# YAML file's keys and values. Paper packages hold their own files; tests, docs and scripts are not
# shared code. The opt-outs say why; ``PAPER_LEAKS`` are the known leaks still to move (the list
# can only shrink: a new leak anywhere fails).
NOT_SHARED = ("tests/", "docs/", "perf/", "scripts/", ".dagster_home/")
OPT_OUT = {
    "forge/benchmarks/registry.py": "the registry: one line per built-in paper (BUILTIN)",
}
PAPER_LEAKS: dict[str, str] = {}  # none left: config/quality.yaml's two per-stage ceilings moved to their stages
CODE_SUFFIXES = (".py", ".yaml", ".yml")


def paper_homes(root: Path = ROOT) -> list[Path]:
    return sorted({s.home.relative_to(root) for s in SPECS if s.home.is_relative_to(root)})


def project_files(root: Path = ROOT) -> list[str]:
    """Every code or settings file of the checkout, tracked or new (what git does not ignore)."""
    import subprocess

    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    return sorted(f for f in set(out) if f.endswith(CODE_SUFFIXES) and (root / f).is_file())


def shared_files(files: list[str], homes: list[Path]) -> list[str]:
    """The shared ones: outside every paper package, not tests / docs / scripts, not opted out."""
    return [
        f
        for f in files
        if not f.startswith(NOT_SHARED)
        and not any(Path(f).is_relative_to(h) for h in homes)
        and f not in OPT_OUT
        and f not in PAPER_LEAKS
    ]


def _code_words(path: Path) -> list[str]:
    import ast

    text = path.read_text()
    if path.suffix != ".py":
        return re.findall(r"[A-Za-z][\w-]*", json.dumps(yaml.safe_load(text)))
    tree = ast.parse(text)
    bodies = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, bodies)
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
        and isinstance(n.body[0].value.value, str)
    }
    out: list[str] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            out.append(n.id)
        elif isinstance(n, ast.Attribute):
            out.append(n.attr)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(n.name)
        elif isinstance(n, ast.alias):
            out += [n.name, n.asname or ""]
        elif isinstance(n, ast.ImportFrom):
            out.append(n.module or "")
        elif isinstance(n, (ast.arg, ast.keyword)):
            out.append(n.arg or "")
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings:
            out.append(n.value)
    return [w for s in out for w in re.findall(r"[A-Za-z][\w-]*", s)]


def papers_named(path: Path, names: set[str]) -> list[str]:
    return sorted({w for w in _code_words(path) if w in names or any(w.startswith(f"{n}_") for n in names)})


def test_no_shared_file_names_a_paper():
    names = set(registry.names())
    files = shared_files(project_files(), paper_homes())
    hits = {f: found for f in files if (found := papers_named(ROOT / f, names))}
    assert not hits, hits


def test_the_scan_covers_every_shared_file():
    """Every code and settings file of the checkout is scanned, in a paper package, not shared code,
    or opted out with a reason; the opt-outs exist and the known leaks still leak."""
    files = project_files()
    homes = paper_homes()
    assert len(homes) == len(SPECS) and all(h.parts[:2] == ("assets", "recipes") for h in homes)
    scanned = set(shared_files(files, homes))
    placed = {
        f
        for f in files
        if f in scanned
        or f.startswith(NOT_SHARED)
        or any(Path(f).is_relative_to(h) for h in homes)
        or f in OPT_OUT
        or f in PAPER_LEAKS
    }
    assert placed == set(files)
    for must in (
        "definitions.py",
        "forge/evals/pipeline.py",
        "assets/evals/assets.py",
        "config/evals.yaml",
        "config/quality.yaml",
    ):
        assert must in scanned, must
    old = {f for f in SHARED if f.is_file() and not f.is_relative_to(ROOT / "tests")}  # the hand-kept list, code part
    assert old <= {ROOT / f for f in scanned | set(PAPER_LEAKS)}
    assert sum(f.startswith(("forge/", "assets/", "resources/", "sensors/", "jobs/", "cli/")) for f in scanned) > 200
    names = set(registry.names())
    for f in (*OPT_OUT, *PAPER_LEAKS):
        assert (ROOT / f).is_file(), f
    still = {f for f in PAPER_LEAKS if papers_named(ROOT / f, names)}
    assert still == set(PAPER_LEAKS), f"moved: take {sorted(set(PAPER_LEAKS) - still)} off PAPER_LEAKS"


def test_the_scan_finds_a_paper_named_in_code_not_in_prose(tmp_path):
    (tmp_path / "shared.py").write_text(
        '"""As MAIA measures it (App. A.4)."""\n# maia_items is the paper\'s table\n'
        "def f(row):\n    return row['extra'].get('maia_question')\n"
    )
    (tmp_path / "prose.py").write_text('"""maia: cited in a docstring."""\n# vimu too\nX = "a sentence about ViMU"\n')
    (tmp_path / "settings.yaml").write_text("stages:\n  vague_candidates: 1.0  # a comment naming iibench\n")
    names = {"maia", "vimu", "vague", "iibench"}
    assert papers_named(tmp_path / "shared.py", names) == ["maia_question"]
    assert papers_named(tmp_path / "prose.py", names) == []
    assert papers_named(tmp_path / "settings.yaml", names) == ["vague_candidates"]
    homes = [Path("assets/recipes/maia")]
    files = ["assets/recipes/maia/logic/x.py", "assets/evals/y.py", "tests/z.py", "forge/benchmarks/registry.py"]
    assert shared_files(files, homes) == ["assets/evals/y.py"]
