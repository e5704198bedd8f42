"""The rules for people's typed text moved to ``forge/checks/text_rules.py`` (a leaf the protocol
steps and the review both use, so neither imports the other for it); this name stays for the
readers not yet moved."""

from forge.checks.text_rules import TextRefused, clean

__all__ = ["TextRefused", "clean"]
