"""One package per paper (assets/recipes/<paper>/, docs/conventions.md), plus what they share:
``mcq_checks.py`` (checks of multiple-choice items) and ``plugins.py`` (recipes kept outside)."""
