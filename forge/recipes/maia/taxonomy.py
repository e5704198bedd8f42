"""MAIA's reasoning categories as data (``categories.yaml``, App. A.2 / A.7 / A.8)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

CATEGORIES_FILE = Path(__file__).resolve().parent / "categories.yaml"


@dataclass(frozen=True)
class Category:
    name: str  # e.g. spatial_partial
    macro: str  # e.g. spatial (MAIA's 9 macro-categories)
    definition: str
    example: dict[str, str]
    foil_edit: str  # the block of the sentence a foil may change
    structural: str  # what makes a foil valid for the category

    @property
    def label(self) -> str:
        return self.name.replace("_", " ")


@lru_cache(maxsize=1)
def categories() -> dict[str, Category]:
    doc = yaml.safe_load(CATEGORIES_FILE.read_text())
    return {name: Category(name=name, **spec) for name, spec in doc.items()}


CATEGORY_NAMES: tuple[str, ...] = tuple(sorted(categories()))
