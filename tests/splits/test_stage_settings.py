"""Resolve once, pass down: a benchmark's splits / gates / export settings are parsed once into
``StageSettings`` where the spec is resolved, and nothing in the after-recipe layers or the
evaluations turns a name back into a spec or parses the gate settings again."""

from __future__ import annotations

import ast
from pathlib import Path

from forge.benchmarks import registry
from forge.benchmarks.spec import BlindAction
from forge.splits.config import GateConfig, SplitSizes, StageSettings, benchmark_config, stage_settings

ROOT = Path(__file__).resolve().parents[2]
BELOW_FACTORY = ("items", "gold", "splits", "gates", "review", "export", "evals")


def test_parsed_once_equals_parsing_each_part():
    raw = benchmark_config(registry.get("iibench"))
    s = StageSettings.parse(raw)
    assert s.document is raw
    # every setting a stage uses is a typed field, read from the one document
    assert (s.seed, s.unit_key, s.options) == (raw["seed"], raw["unit_key"], raw["options"])
    assert (
        s.leakage_keys == tuple(raw["leakage_keys"]) and s.phash_threshold == raw["near_duplicate"]["phash_threshold"]
    )
    assert (s.export.force_stub, s.export.copy_media) == (raw["export"]["force_stub"], raw["export"]["copy_media"])
    assert s.version_slice("gate")["blind"] is raw["blind"] and "force_stub" not in s.version_slice("export")
    assert s.recorded() == raw and s.recorded() is not raw
    assert s.sizes == SplitSizes.from_config(raw) and s.sizes.names == ["dev", "validation", "test"]
    assert s.gates == GateConfig.from_config(raw)
    assert stage_settings(registry.get("vimu")).gates.rebalance_positions is False  # fixed-order options


def test_a_run_blind_action_overrides_without_touching_the_original():
    s = stage_settings(registry.get("vague"))
    assert s.with_blind_action(str(s.gates.blind.action)) is s
    other = "off" if s.gates.blind.action != BlindAction.OFF else "report"
    run = s.with_blind_action(other)
    assert str(run.gates.blind.action) == other and run.document["blind"]["action"] == other
    assert s.gates.blind.action != BlindAction(other) and s.document["blind"].get("action") != other


def test_the_run_action_wins_over_legacy_keys():
    # `blind: {enabled: false}` (no action) parses as off; a run that asks for report gets report
    raw = dict(benchmark_config(registry.get("vague")), blind={"enabled": False, "unit": "item"})
    s = StageSettings.parse(raw)
    assert s.gates.blind.action == BlindAction.OFF
    assert s.with_blind_action("report").gates.blind.action == BlindAction.REPORT


def _document_reads(source: str, rel: str) -> list[str]:
    """``<x>.document`` / ``<x>.raw`` read off a settings object: the stages use typed fields."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in ("document", "raw"):
            owner = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
            if "settings" in owner:
                found.append(f"{rel}:{node.lineno}: {owner}.{node.attr}")
    return found


def test_no_stage_reads_the_settings_document():
    found = []
    for top in ("forge", "assets"):
        for f in sorted((ROOT / top).rglob("*.py")):
            rel = f.relative_to(ROOT).as_posix()
            if rel != "forge/splits/config.py":
                found += _document_reads(f.read_text(), rel)
    assert found == []
    assert _document_reads("cfg = settings.raw\nx = self.settings.document", "x.py") == [
        "x.py:1: settings.raw",
        "x.py:2: settings.document",
    ]  # the check can fail


def _lookups(source: str, rel: str) -> list[str]:
    """``resolve(...)`` / ``registry.get(...)`` (any import of the registry, a function-local one
    too) and ``GateConfig.from_config(...)`` calls (outside the one parse in ``StageSettings``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import) and any(a.name == "forge.benchmarks.registry" for a in node.names):
            found.append(f"{rel}:{node.lineno}: imports the registry")
        if isinstance(node, ast.ImportFrom) and node.module == "forge.benchmarks.registry":
            found.append(f"{rel}:{node.lineno}: imports the registry")
        if isinstance(node, ast.ImportFrom) and node.module == "forge.benchmarks":
            if any(a.name == "registry" for a in node.names):
                found.append(f"{rel}:{node.lineno}: imports the registry")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = f"{getattr(owner, 'id', '')}.{node.func.attr}"
            if name == "GateConfig.from_config" and rel != "forge/splits/config.py":
                found.append(f"{rel}:{node.lineno}: parses GateConfig again")
    return found


def _calls_below_factory() -> list[str]:
    """Name-to-spec lookups in the after-recipe layers and the evaluations (the Dagster factories,
    the CLI and the sensors resolve; everything under them gets the spec)."""
    found = []
    for pkg in BELOW_FACTORY:
        for f in sorted((ROOT / "forge" / pkg).rglob("*.py")):
            found += _lookups(f.read_text(), f.relative_to(ROOT).as_posix())
    return found


def test_nothing_below_the_factory_looks_a_benchmark_up_by_name():
    assert _calls_below_factory() == []


def test_the_lookup_check_sees_a_lookup_inside_a_function():
    # the shape the evaluations had: a function-local import "because of cycles"
    planted = (
        "def score(benchmark):\n"
        "    from forge.benchmarks.registry import resolve\n"
        "    return resolve(benchmark)\n"
        "import forge.benchmarks.registry\n"
        "from forge.benchmarks import registry\n"
    )
    assert [x.split(": ", 1)[1] for x in _lookups(planted, "forge/evals/x.py")] == ["imports the registry"] * 3


BENCHMARK_PARAMS = {"benchmark", "bench"}  # the benchmark is `spec` (its name: `spec.name`)


def _benchmark_params(source: str, rel: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                if arg.arg in BENCHMARK_PARAMS:
                    found.append(f"{rel}:{node.lineno}: {node.name}({arg.arg})")
    return found


def test_the_evaluations_call_the_benchmark_spec():
    found = []
    for f in sorted((ROOT / "forge" / "evals").rglob("*.py")):
        found += _benchmark_params(f.read_text(), f.relative_to(ROOT).as_posix())
    assert found == []
    assert _benchmark_params("def f(bench, spec): ...", "x.py") == ["x.py:1: f(bench)"]  # the check can fail


# -- the review settings: resolved in one place, handed down -----------------------------------------

RESOLVERS = ("review_spec", "stage_settings")  # the review settings' resolver, and the one function calling it
SCANNED = ("forge", "assets", "sensors", "jobs", "cli", "resources")


def _resolutions(source: str, rel: str) -> list[str]:
    """Calls of the review settings' resolver (``review_spec``) and of ``stage_settings``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in RESOLVERS:
                found.append(f"{rel}:{node.lineno}: {name}")
    return found


def _all_resolutions() -> list[str]:
    files = [f for top in SCANNED for f in sorted((ROOT / top).rglob("*.py"))] + [ROOT / "definitions.py"]
    return [x for f in files for x in _resolutions(f.read_text(), f.relative_to(ROOT).as_posix())]


def test_review_settings_are_resolved_in_one_place_and_handed_down():
    found = _all_resolutions()
    # review_spec has one caller, stage_settings; nothing in forge/ but its definition calls that
    assert [x for x in found if x.endswith(": review_spec")] == [
        x for x in found if x.startswith("forge/splits/config.py") and x.endswith(": review_spec")
    ]
    assert len([x for x in found if x.endswith(": review_spec")]) == 1
    assert [x for x in found if x.startswith("forge/") and x.endswith(": stage_settings")] == []
    # the callers: the two factories, the people sensor (its jobs and each tick), and a recipe stage
    # that regenerates what reviewers rejected (once per run, handed to forge.review.regenerate)
    callers = {x.split(":")[0] for x in found if x.endswith(": stage_settings")}
    assert {"assets/splits/factory.py", "assets/people/factory.py", "sensors/people.py"} <= callers
    assert callers - {"assets/splits/factory.py", "assets/people/factory.py", "sensors/people.py"} <= {
        f"assets/recipes/{p}/assets.py" for p in registry.names()
    }
    planted = "def push(spec):\n    rs = review_spec(spec.name, spec.review)\n    s = config.stage_settings(spec)\n"
    assert _resolutions(planted, "forge/review/x.py") == [
        "forge/review/x.py:2: review_spec",
        "forge/review/x.py:3: stage_settings",
    ]


def test_one_settings_object_reaches_every_kind_of_people_work(monkeypatch):
    """The kinds act on the settings they are handed, whatever config/review.yaml or the environment
    say meanwhile: nothing under them resolves again."""
    import dataclasses

    from forge.benchmarks.review_spec import ReviewPolicy
    from forge.evals.people_kinds import kinds_of

    monkeypatch.setenv("SUBTEXT_REVIEW_POLICY", "required")
    spec = registry.get("maia")
    settings = stage_settings(spec)
    assert settings.review_settings().policy == ReviewPolicy.REQUIRED  # resolved: the environment counted
    off = dataclasses.replace(settings, review=dataclasses.replace(settings.review, policy=ReviewPolicy.OFF))
    kinds = kinds_of(spec, off)
    assert {k.family for k in kinds} >= {"review", "step", "human"}
    assert {k.key: k.policy() for k in kinds} == {k.key: "off" for k in kinds}
    review = next(k for k in kinds if k.family == "review")
    assert review.watch(None).reasons == []  # policy off: never due, the probe not even looked at
    assert {k.key: k.policy() for k in kinds_of(spec, settings)} == {k.key: "required" for k in kinds}
    with_export = dataclasses.replace(settings, review=dataclasses.replace(settings.review, export_after_review=True))
    assert next(k for k in kinds_of(spec, with_export) if k.family == "review").also() == ("maia_export",)


def test_settings_parsed_without_review_settings_are_refused_where_needed():
    import pytest

    s = StageSettings.parse(benchmark_config(registry.get("vague")))
    with pytest.raises(ValueError, match="stage_settings"):
        s.review_settings()
    assert stage_settings(registry.get("vague")).with_blind_action("off").review is not None  # kept by a run's override


def test_each_factory_resolves_once_per_benchmark(monkeypatch):
    import assets.people.factory as people_factory
    import assets.splits.factory as splits_factory

    for mod in (splits_factory, people_factory):
        calls: list[str] = []
        real = mod.stage_settings
        monkeypatch.setattr(
            mod, "stage_settings", lambda spec, _real=real, _calls=calls: _calls.append(spec.name) or _real(spec)
        )
        (splits_factory.benchmark_defs if mod is splits_factory else people_factory.people_defs)("hummus")
        assert calls == ["hummus"], mod.__name__


def test_the_export_gates_under_the_review_settings_it_is_handed(tmp_path, monkeypatch):
    import dataclasses

    from forge.benchmarks.review_spec import ReviewPolicy
    from forge.export import stages as export
    from forge.storage import TableStore
    from tests.review import world

    monkeypatch.setenv("SUBTEXT_REVIEW_POLICY", "required")
    store = TableStore(tmp_path)
    world.maia(store, n=3)
    spec = registry.get("maia")
    settings = stage_settings(spec)
    handed = dataclasses.replace(settings, review=dataclasses.replace(settings.review, policy=ReviewPolicy.ADVISORY))
    seen = []
    real = export.review_gate
    monkeypatch.setattr(
        export, "review_gate", lambda store, spec, rs, gated: seen.append(rs) or real(store, spec, rs, gated)
    )
    out = export.run_export(store, spec, handed, force_stub=True)
    assert seen == [handed.review] and out.metadata["status"] == "written"  # required would hold all 3 back
