"""Root of the code location (loaded by workspace.yaml): assembles, applies policy, nothing else.

Each stage package under assets/, jobs/ and sensors/ exposes a module-level
``defs = dg.Definitions(...)``; resources/ exposes one ``Definitions`` with one instance
per resource key. They are discovered here, so adding a stage never touches this file.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from types import ModuleType

import dagster as dg


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


def build_defs() -> dg.Definitions:
    import assets
    import jobs
    import resources
    import sensors

    from jobs.stages import stage_jobs

    parts = [resources.defs]
    for package in (assets, jobs, sensors):
        parts.extend(collect_defs(package))
    merged = dg.Definitions.merge(*parts)
    # Policy applied once, here: every stage group gets its job(s).
    return dg.Definitions.merge(merged, dg.Definitions(jobs=stage_jobs(merged.resolve_asset_graph())))


@dg.definitions
def defs() -> dg.Definitions:
    return build_defs()
