"""Root of the code location (loaded by workspace.yaml): assembles, applies policy, nothing else.

Each stage package under assets/, jobs/ and sensors/ exposes a module-level
``defs = dg.Definitions(...)``; resources/ exposes one ``Definitions`` with one instance
per resource key. They are discovered here, so adding a stage never touches this file.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import dagster as dg

from forge.console.build_console import console_logger

_ROOT = str(Path(__file__).resolve().parent)

# Who answers for each stage group (Dagster shows owners on every asset and filters by them).
# One team per layer; a benchmark's recipe group takes its spec's owners (forge/benchmarks);
# a group missing from both falls back to DEFAULT_OWNERS.
GROUP_OWNERS: dict[str, list[str]] = {
    "ingest": ["team:media"],
    "vision": ["team:vision"],
    "splits": ["team:evals"],
    "evals": ["team:evals"],
}
DEFAULT_OWNERS = ["team:platform"]


def owners_for(group: str) -> list[str]:
    from forge.benchmarks.registry import by_group

    spec = by_group().get(group)
    return list(spec.owners) if spec is not None else GROUP_OWNERS.get(group, DEFAULT_OWNERS)


def apply_policy(spec: dg.AssetSpec) -> dg.AssetSpec:
    """Readable-graph policy applied to every asset spec: owners by group, a ``stage`` tag,
    and fallbacks for a missing kind or description (an asset's own values always win)."""
    group = spec.group_name or "default"
    owners = list(spec.owners) or owners_for(group)
    kinds = set(spec.kinds) or {"python"}
    description = spec.description or (
        f"`{spec.key.to_user_string()}` (stage group `{group}`): writes the table of the same name; "
        "query it with `make query`."
    )
    tags = {k: v for k, v in spec.tags.items() if not k.startswith("dagster/kind/")}  # kinds travel separately
    bench = benchmark_of(spec.key.to_user_string(), group)
    if bench:  # `tag:benchmark=<name>` selects one paper's assets, from its recipe to its report
        tags["benchmark"] = bench
    return spec.replace_attributes(owners=owners, kinds=kinds, description=description, tags={**tags, "stage": group})


def benchmark_of(key: str, group: str) -> str | None:
    """The benchmark an asset belongs to: its recipe group, else the ``<name>_`` prefix of the
    shared per-benchmark stages (splits, gates, exports, releases, evaluations)."""
    from forge.benchmarks.registry import by_group, names

    spec = by_group().get(group)
    if spec is not None:
        return spec.name
    return next((n for n in sorted(names(), key=len, reverse=True) if key.startswith(f"{n}_")), None)


def _with_llm_version(defs: dg.Definitions, policy):
    """The policy, plus: every asset that calls the ``llm`` resource gets the configured backend,
    endpoint and model (never the key) in its code version, so pointing the project at a real
    endpoint or another model marks exactly the LLM stages and their descendants changed."""
    from forge.provenance.versioning import content_hash
    from resources.llm import default_llm

    llm_keys = {
        key
        for a in defs.assets or []
        if isinstance(a, dg.AssetsDefinition) and "llm" in a.required_resource_keys
        for key in a.keys
    }
    identity = default_llm().describe()

    def apply(spec: dg.AssetSpec) -> dg.AssetSpec:
        spec = policy(spec)
        if spec.key in llm_keys:
            spec = spec.replace_attributes(code_version=content_hash(spec.code_version, identity))
        return spec

    return apply


def collect_defs(package: ModuleType) -> Iterator[dg.Definitions]:
    """Every module-level ``defs`` Definitions found under ``package`` (sorted by module name)."""
    found = getattr(package, "defs", None)
    if isinstance(found, dg.Definitions):
        yield found
    for info in sorted(pkgutil.walk_packages(package.__path__, package.__name__ + "."), key=lambda i: i.name):
        module = importlib.import_module(info.name)
        found = getattr(module, "defs", None)
        if isinstance(found, dg.Definitions):
            yield found


LOGGER_KEY = "build_console"


@dg.logger(
    {"log_level": dg.Field(str, is_required=False, default_value="INFO")},
    description="cli.build's compact console: INFO and up, one progress line per long stage.",
)
def build_console_logger(init_context: dg.InitLoggerContext) -> logging.Logger:
    return console_logger(init_context.logger_config["log_level"])


def quiet_dagster_warnings() -> None:
    """Ignore Dagster's BetaWarning / PreviewWarning (the APIs are used on purpose; 30+ lines per
    definitions load); every other warning category is untouched."""
    for category in (dg.BetaWarning, dg.PreviewWarning):
        warnings.filterwarnings("ignore", category=category)


def prepare_process() -> None:
    """What a process that loads the location needs before any stage is imported (the code server,
    every run worker, `dagster definitions validate`, cli.build all call ``build_defs``)."""
    from forge.models.offline_env import apply as apply_offline_env
    from forge.provenance.environment import apply_recorded_environment

    # the dependencies' usage-reporting opt-outs (forge/models/offline_env.py, docs/security.md)
    apply_offline_env()
    # Dagster's beta / preview warnings: 30+ identical lines per load, for APIs used on purpose
    quiet_dagster_warnings()
    # the settings the data dir was built with (forge/provenance/environment.py), under what the
    # environment sets: `make ui`, its sensors and `dg launch` build a demo data dir with the demo's
    # profile and sources
    apply_recorded_environment()


def build_defs() -> dg.Definitions:
    # The CLI (`dagster asset materialize -m definitions`, `dg launch`) imports this module with
    # the repo root on sys.path, then restores sys.path before calling the lazy `defs`; the stage
    # packages (assets/, forge/, ...) must stay importable when it does.
    if _ROOT not in sys.path:
        sys.path.insert(0, _ROOT)
    prepare_process()
    import assets
    import jobs
    import resources
    import sensors
    from jobs.stages import stage_jobs

    # The build console logger is declared by every job of the location (unused unless a run's
    # config names it, as cli.build's runs do), so a `cli.build` run's stored config is valid for its
    # job and re-executes from the UI as it was made; Dagster's console logger stays the default.
    console = dg.Definitions(loggers={"console": dg.colored_console_logger, LOGGER_KEY: build_console_logger})
    parts = [resources.definitions(), console]
    for package in (assets, jobs, sensors):
        parts.extend(collect_defs(package))
    with warnings.catch_warnings():  # map_asset_specs is "preview" in 1.13; its behaviour is what we need
        warnings.simplefilter("ignore", dg.PreviewWarning)
        merged = dg.Definitions.merge(*parts)
        merged = merged.map_asset_specs(func=_with_llm_version(merged, apply_policy))
    # Policy applied once, here: owners/kinds/descriptions above, and every stage group gets its job(s).
    return dg.Definitions.merge(merged, dg.Definitions(jobs=stage_jobs(merged.resolve_asset_graph())))


@dg.definitions
def defs() -> dg.Definitions:
    return build_defs()
