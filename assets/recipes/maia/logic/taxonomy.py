"""MAIA's reasoning categories as data (``categories.yaml``, App. A.2 / A.7 / A.8).

Texts come in the recipe's language (``Category.localized``: the ``it`` block of a category);
causal questions carry a type, explicit or implicit (App. A.2 fn. 10, A.3 fn. 11: one category,
the two types equally represented, reported apart in Tables 10 and 13).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from forge.checks.text import check_language
from forge.storage.yaml_files import read_yaml

CATEGORIES_FILE = Path(__file__).resolve().parent / "categories.yaml"
CAUSAL = "causal"
CAUSAL_TYPES: tuple[str, ...] = ("explicit", "implicit")


@dataclass(frozen=True)
class Category:
    name: str  # e.g. spatial_partial
    macro: str  # e.g. spatial (MAIA's 9 macro-categories)
    definition: str
    example: dict[str, str]
    foil_edit: str  # the block of the sentence a foil may change
    structural: str  # what makes a foil valid for the category
    types: dict[str, dict[str, Any]] = field(default_factory=dict)  # causal: explicit / implicit
    translations: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False)
    label_text: str | None = None

    @property
    def label(self) -> str:
        return self.label_text or self.name.replace("_", " ")

    def localized(self, lang: str) -> Category:
        """The category's texts in ``lang`` (``en``: as written); a missing translation is an error."""
        lang = check_language(lang)
        if lang == "en":
            return self
        if lang not in self.translations:
            raise ValueError(f"MAIA category {self.name!r} has no {lang!r} texts in {CATEGORIES_FILE.name}")
        tr = self.translations[lang]
        return replace(
            self,
            definition=tr["definition"],
            example=tr["example"],
            foil_edit=tr["foil_edit"],
            structural=tr["structural"],
            types=tr.get("types", {}),
            label_text=tr.get("label"),
        )

    def of_type(self, causal_type: Any) -> Category:
        """The causal type's own label, definition and example (other fields unchanged); no type
        (None, or a table's null / NaN) is the category itself."""
        if not isinstance(causal_type, str) or not causal_type:
            return self
        if causal_type not in self.types:
            raise ValueError(f"category {self.name!r} has no type {causal_type!r}; known: {sorted(self.types)}")
        t = self.types[causal_type]
        label = t.get("label") or f"{causal_type} {self.name}"
        return replace(self, definition=t["definition"], example=t["example"], label_text=label)


@lru_cache(maxsize=1)
def categories() -> dict[str, Category]:
    doc = read_yaml(CATEGORIES_FILE)
    out = {}
    for name, spec in doc.items():
        spec = dict(spec)
        translations = {k: spec.pop(k) for k in list(spec) if k in ("it",)}
        out[name] = Category(name=name, translations=translations, **spec)
    return out


def category(name: str, lang: str = "en", causal_type: str | None = None) -> Category:
    return categories()[name].localized(lang).of_type(causal_type)


def category_names() -> tuple[str, ...]:
    """The categories' names, sorted (read from ``categories.yaml`` when first asked, not at import)."""
    return tuple(sorted(categories()))
