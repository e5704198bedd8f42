"""Plain, Dagster-free logic of Subtext Forge, one package per concern: storage (tables, catalog,
contracts), media, vision, models (protocols, weights, runtimes), llm, checks, scale, splits,
evals, releases, review, benchmarks (spec, registry, recipe settings), provenance (hashes,
lineage, recorded environment) and console (build summary, catalog queries). Each paper's own
logic lives in its package (assets/recipes/<paper>/logic/).

The Dagster definitions in assets/, resources/, jobs/ and sensors/ are thin wrappers
around the functions here, so everything can be tested without Dagster.
"""
