"""The registry: every benchmark the shared stages build and evaluate.

Adding a benchmark is one folder (``assets/recipes/<name>/spec.py`` with a module-level
``SPEC``, its recipe assets, contract, config, doc) and one line in ``BUILTIN`` below.
A benchmark kept outside this repository registers through the environment instead:
``SUBTEXT_BENCHMARKS=my_pkg.spec,other_pkg.spec:MY_SPEC`` (read when the definitions load).
Tests register a spec for the duration of a block with ``registered(spec)``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from forge.benchmarks.spec import BenchmarkSpec
from forge.storage.contracts import hand_benchmarks

# One line per built-in benchmark: the module holding its ``SPEC``.
BUILTIN = (
    "assets.recipes.maia.spec",
    "assets.recipes.vague.spec",
    "assets.recipes.vimu.spec",
    "assets.recipes.iibench.spec",
    "assets.recipes.hummus.spec",
)
ENV_VAR = "SUBTEXT_BENCHMARKS"
_runtime: dict[str, BenchmarkSpec] = {}


def load_spec(ref: str) -> BenchmarkSpec:
    """``module`` (its ``SPEC``) or ``module:attribute`` → the spec, type-checked."""
    module, _, attr = ref.strip().partition(":")
    spec = getattr(importlib.import_module(module), attr or "SPEC", None)
    if not isinstance(spec, BenchmarkSpec):
        raise TypeError(f"{ref!r} does not name a BenchmarkSpec")
    return spec


def specs() -> tuple[BenchmarkSpec, ...]:
    """Built-in, then environment, then runtime-registered specs; names are unique."""
    refs = list(BUILTIN) + [r for r in os.environ.get(ENV_VAR, "").split(",") if r.strip()]
    out: dict[str, BenchmarkSpec] = {}
    for spec in [load_spec(r) for r in refs] + list(_runtime.values()):
        if spec.name in out and out[spec.name] is not spec:
            raise ValueError(f"two benchmarks are named {spec.name!r}")
        out[spec.name] = spec
    return tuple(out.values())


def names() -> tuple[str, ...]:
    return tuple(s.name for s in specs())


def get(name: str) -> BenchmarkSpec:
    for s in specs():
        if s.name == name:
            return s
    raise KeyError(f"unknown benchmark {name!r}; registered: {', '.join(names())}")


def resolve(benchmark: str | BenchmarkSpec) -> BenchmarkSpec:
    return benchmark if isinstance(benchmark, BenchmarkSpec) else get(benchmark)


def by_group() -> dict[str, BenchmarkSpec]:
    return {s.group: s for s in specs()}


def contract_dirs() -> tuple[Path, ...]:
    """Every registered benchmark's own contracts folder (its package's ``contracts/``)."""
    return tuple(s.contracts_dir for s in specs() if s.contracts_dir is not None)


def register(spec: BenchmarkSpec) -> None:
    if spec.name in _runtime and _runtime[spec.name] is not spec:
        raise ValueError(f"benchmark {spec.name!r} is already registered")
    _runtime[spec.name] = spec


def unregister(name: str) -> None:
    _runtime.pop(name, None)


@contextmanager
def registered(spec: BenchmarkSpec) -> Iterator[BenchmarkSpec]:
    register(spec)
    try:
        yield spec
    finally:
        unregister(spec.name)


# The contracts (forge/storage, a floor below) are handed where the names and folders come from;
# this stores two functions and reads nothing: they are called when a contract is looked up.
hand_benchmarks(names, contract_dirs)
