"""The recipe assets of benchmarks kept outside ``assets/`` (a plug-in named in
``SUBTEXT_BENCHMARKS``, a test's benchmark): each spec's ``definitions_module``. The code location
collects every ``defs`` under ``assets/`` itself, so the built-in papers' are skipped here."""

import importlib

import dagster as dg

from forge.benchmarks import registry

defs = dg.Definitions.merge(
    *(
        importlib.import_module(s.definitions_module).defs
        for s in registry.specs()
        if s.definitions_module and not s.definitions_module.startswith("assets.")
    )
)
