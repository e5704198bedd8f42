"""Resources, one instance per key, collected from each module's ``RESOURCES`` dict.

A module here defines its ``ConfigurableResource`` class(es) and a module-level
``RESOURCES = {"key": instance}``; keys must not collide (checked at load).
"""

from __future__ import annotations

import importlib
import pkgutil

import dagster as dg


def _collect() -> dict[str, object]:
    out: dict[str, object] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for key, res in getattr(module, "RESOURCES", {}).items():
            if key in out:
                raise ValueError(f"resource key {key!r} defined twice (second in resources/{info.name}.py)")
            out[key] = res
    return out


defs = dg.Definitions(resources=_collect())
