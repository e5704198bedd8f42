"""Dagster-free logic of the vague recipe."""
