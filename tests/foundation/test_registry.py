"""The benchmark registry: every spec is complete, and the shared stages never name a paper."""

from __future__ import annotations

import importlib
import io
import json
import re
import tokenize
from pathlib import Path

import pytest
import yaml

from forge.benchmarks import registry
from forge.benchmarks.spec import BenchmarkSpec, BlindAction, BlindUnit, OptionPolicy
from forge.storage.contracts import load_contract

ROOT = Path(__file__).resolve().parents[2]
SPECS = registry.specs()
# The shared stages (and the files that used to list the papers): they read the registry.
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
# In these the settings themselves may not name a paper; their comments cite the papers a shared
# default follows (e.g. "VAGUE reports text-only accuracy, Table 1"), as docs do.
DATA_ONLY = {ROOT / "config" / f"{n}.yaml" for n in ("evals", "splits", "review", "releases")}
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
    assert spec.importer is None or callable(spec.importer)


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


def _tokens(path: Path) -> list[str]:
    text = path.read_text()
    if path in DATA_ONLY:
        text = json.dumps(yaml.safe_load(text))
    if path.suffix != ".py":
        return re.findall(r"[A-Za-z][\w-]*", text)
    out = []
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    for t in toks:
        if t.type in (tokenize.NAME, tokenize.STRING, tokenize.COMMENT):
            out += re.findall(r"[A-Za-z][\w-]*", t.string)
    return out


def test_shared_stages_never_name_a_paper():
    names = {n.lower() for n in registry.names()} | {"ii-bench"}
    hits = {}
    for path in SHARED:
        found = sorted(
            {w for w in _tokens(path) if w.lower() in names or any(w.lower().startswith(f"{n}_") for n in names)}
        )
        if found:
            hits[str(path.relative_to(ROOT))] = found
    assert not hits, hits


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
