"""VAGUE's public release (2.0 records with images)."""

from assets.releases.factory import release_defs

from .logic.release import parse_release

defs = release_defs("vague", parse_release)
