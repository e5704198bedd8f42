"""Plain, Dagster-free logic of Subtext Forge, one package per concern, each on its floor (forge/layers.py).

Each paper's own logic lives in its package (assets/recipes/<paper>/logic/).

The Dagster definitions in assets/, resources/, jobs/ and sensors/ are thin wrappers
around the functions here, so everything can be tested without Dagster.
"""
