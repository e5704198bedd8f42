"""Resources, one instance per key, collected from each module's ``resources()``.

A module here defines its ``ConfigurableResource`` class(es) and a function
``resources() -> {"key": instance}``. They are built when the definitions load
(``definitions()``, called by definitions.py), from the environment as it is then, never at
import; keys must not collide (checked there).
"""

from __future__ import annotations

import importlib
import pkgutil

import dagster as dg


def _collect() -> dict[str, object]:
    out: dict[str, object] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for key, res in (module.resources() if hasattr(module, "resources") else {}).items():
            if key in out:
                raise ValueError(f"resource key {key!r} defined twice (second in resources/{info.name}.py)")
            out[key] = res
    return out


def definitions() -> dg.Definitions:
    return dg.Definitions(resources=_collect())
