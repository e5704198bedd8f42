"""Hummus's public release (dataset, test set, image descriptions)."""

from assets.releases.factory import release_defs

from .logic.release import parse_release

defs = release_defs("hummus", parse_release)
