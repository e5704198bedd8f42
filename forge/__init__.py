"""Plain, Dagster-free logic of Subtext Forge: storage, media, vision, LLM engine, recipes.

The Dagster definitions in assets/, resources/, jobs/ and sensors/ are thin wrappers
around the functions here, so everything can be tested without Dagster.
"""
