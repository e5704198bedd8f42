"""Command-line programs of Subtext Forge (`python -m cli.build`, `make demo`) and their support.

They run the code location from outside it; the definitions themselves live in assets/, jobs/,
sensors/ and resources/.
"""
