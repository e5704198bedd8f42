"""Recipe asset packages, one per paper (assets/recipes/<paper>/), plus helpers they share.

``defs`` here holds the recipe assets of benchmarks registered from outside this folder
(``BenchmarkSpec.definitions_module``, e.g. a plug-in named in ``SUBTEXT_BENCHMARKS``);
built-in recipes are discovered in their own sub-packages.
"""

import importlib

import dagster as dg

from forge.benchmarks import registry

defs = dg.Definitions.merge(
    *(importlib.import_module(s.definitions_module).defs for s in registry.specs() if s.definitions_module)
)
