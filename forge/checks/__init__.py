"""Checks shared by every recipe: text statistics, NLI, multiple-choice helpers."""
