"""The floors of ``forge/``, lowest first: a package imports only from the floors below it
(tests/foundation/test_layers.py keeps the code so; scripts/gen_docs.py draws the house from it).

Plain data, importing nothing. Packages on one floor share it and do not import each other;
every package of ``forge/`` is named once.
"""

LAYERS: list[tuple[str, ...]] = [
    ("storage",),  # tables, catalog, contracts (handed the benchmark names: forge/benchmarks/registry.py)
    ("provenance",),  # hashes, lineage, the recorded environment
    ("llm",),  # the engine, its backends and cache
    ("models",),  # the model protocols (NLI's among them), weights, runtimes
    (
        "checks",
        "scale",
        "people",
    ),  # text, language, NLI, MCQ checks; the Ray pool; the people loop's core (Label Studio, tasks, ledger, agreement)
    ("vision", "media"),
    ("benchmarks",),  # the spec, the registry, recipe settings
    ("items",),
    ("releases",),
    ("gold",),
    ("splits",),
    ("gates",),
    ("protocol",),
    ("review",),
    ("export",),
    ("evals",),
    ("console",),  # the build summary and catalog queries
]
