"""The ViMU taxonomy as data (``taxonomy.yaml``) plus the code that validates labels against it.

Three multi-label axes (rhetoric mechanisms, social value signals, evidence sources), each with
fine labels and five lettered macro categories (A–E), plus target-subject kinds. Label matching
is tolerant of case, spacing, hyphens and underscores ("bait-and-switch" == "Bait and Switch"),
never of anything else: an unknown label is reported, not guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from forge.storage.yaml_files import read_yaml

TAXONOMY_PATH = Path(__file__).with_name("taxonomy.yaml")
LETTERS = ("A", "B", "C", "D", "E")
AXES = ("rhetoric", "social_value", "evidence")


def norm_label(text: str) -> str:
    """Comparison key for a label: lower case, runs of space / '-' / '_' / '/' as one space."""
    return re.sub(r"[\s_\-/]+", " ", str(text).strip().lower())


@dataclass(frozen=True)
class Label:
    name: str
    macro: str | None
    definition: str
    hint_terms: tuple[str, ...]
    exclusive: bool = False


@dataclass(frozen=True)
class Macro:
    letter: str
    name: str
    definition: str


@dataclass(frozen=True)
class Axis:
    key: str
    title: str
    task: str
    question: str
    macros: tuple[Macro, ...]
    labels: tuple[Label, ...]

    @property
    def label_names(self) -> list[str]:
        return [lab.name for lab in self.labels]

    def macro(self, letter: str) -> Macro:
        return next(m for m in self.macros if m.letter == letter)

    def lookup(self, raw: str) -> Label | None:
        key = norm_label(raw)
        return next((lab for lab in self.labels if norm_label(lab.name) == key), None)


@dataclass(frozen=True)
class LabelCheck:
    """Outcome of validating one axis' labels: canonical names, unknowns, dropped conflicts."""

    labels: list[str]
    unknown: list[str]
    dropped_exclusive: list[str]

    @property
    def ok(self) -> bool:
        return not self.unknown and bool(self.labels)


@dataclass(frozen=True)
class Taxonomy:
    version: int
    axes: dict[str, Axis]
    dimension_terms: tuple[str, ...]
    target_kinds: tuple[str, ...]
    raw: dict[str, Any]

    def axis(self, key: str) -> Axis:
        return self.axes[key]

    def check_labels(self, axis: str, raw_labels: list[str]) -> LabelCheck:
        """Canonicalise ``raw_labels`` (dedup, taxonomy order) and report what is not in the taxonomy.

        An ``exclusive`` label (Literal Only, None) contradicts any other label of its axis; when
        both are given the exclusive one is dropped (the specific labels carry the information)
        and reported in ``dropped_exclusive``.
        """
        ax = self.axes[axis]
        found: set[str] = set()
        unknown: list[str] = []
        for raw in raw_labels or []:
            lab = ax.lookup(raw)
            if lab is None:
                unknown.append(str(raw))
            else:
                found.add(lab.name)
        ordered = [name for name in ax.label_names if name in found]
        dropped: list[str] = []
        if len(ordered) > 1:
            excl = {lab.name for lab in ax.labels if lab.exclusive}
            dropped = [n for n in ordered if n in excl]
            ordered = [n for n in ordered if n not in excl]
        return LabelCheck(ordered, unknown, dropped)

    def macro_letters(self, axis: str, labels: list[str]) -> list[str]:
        """Sorted macro letters of canonical fine ``labels`` (labels without a macro, e.g. Other, add none)."""
        ax = self.axes[axis]
        letters = {lab.macro for name in labels if (lab := ax.lookup(name)) is not None and lab.macro}
        return sorted(letters)

    def macro_names(self, axis: str, letters: list[str]) -> list[str]:
        ax = self.axes[axis]
        return [ax.macro(x).name for x in letters]

    def hint_terms(self, axes: tuple[str, ...] = ("dimension", *AXES)) -> list[str]:
        """Every surface form a hint-free question must avoid, for the selected axes."""
        terms: list[str] = []
        if "dimension" in axes:
            terms += list(self.dimension_terms)
        for key in axes:
            if key in self.axes:
                for lab in self.axes[key].labels:
                    terms += list(lab.hint_terms)
        seen: set[str] = set()
        out = []
        for t in terms:
            k = norm_label(t)
            if k and k not in seen:
                seen.add(k)
                out.append(t)
        return out

    def guidance(self, axis: str) -> str:
        """The App. G guidance block: the five macro categories with their definitions."""
        ax = self.axes[axis]
        return "\n".join(f"{m.letter}. {m.name}: {m.definition}" for m in ax.macros)

    def grouped_guidance(self, axis: str) -> str:
        """Guidance in the layout of the official guided prompt (scripts/20-vimu_ss.py): each
        macro option, its definition, then the fine patterns it groups with their definitions."""
        ax = self.axes[axis]
        kind = "rhetorical categories" if axis == "rhetoric" else "social value signals"
        out = [
            "Additional guidance on taxonomy categories:",
            "",
            f"The options correspond to high-level {kind}; each summarises several finer-grained patterns.",
            "",
        ]
        for m in ax.macros:
            out += [f"{m.letter}. {m.name}", m.definition, "Typical patterns include:"]
            out += [f"- {lab.name}: {lab.definition}" for lab in ax.labels if lab.macro == m.letter]
            out.append("")
        return "\n".join(out).rstrip("\n")


def parse_taxonomy(doc: dict[str, Any]) -> Taxonomy:
    axes: dict[str, Axis] = {}
    for key in AXES:
        a = doc["axes"][key]
        macros = tuple(Macro(letter, m["name"], m.get("definition", "")) for letter, m in a["macros"].items())
        if tuple(m.letter for m in macros) != LETTERS:
            raise ValueError(f"taxonomy axis {key}: macros must be exactly {LETTERS}")
        labels = tuple(
            Label(
                name=lab["name"],
                macro=lab.get("macro"),
                definition=lab.get("definition", ""),
                hint_terms=tuple(lab.get("hint_terms") or ()),
                exclusive=bool(lab.get("exclusive", False)),
            )
            for lab in a["labels"]
        )
        for lab in labels:
            if lab.macro is not None and lab.macro not in LETTERS:
                raise ValueError(f"taxonomy {key}.{lab.name}: macro {lab.macro!r} not in {LETTERS}")
        names = [norm_label(lab.name) for lab in labels]
        if len(set(names)) != len(names):
            raise ValueError(f"taxonomy axis {key}: duplicate label names")
        axes[key] = Axis(key, a["title"], a["task"], a["question"], macros, labels)
    return Taxonomy(
        version=int(doc.get("version", 1)),
        axes=axes,
        dimension_terms=tuple(doc.get("dimensions", {}).get("hint_terms") or ()),
        target_kinds=tuple(doc.get("target_kinds") or ()),
        raw=doc,
    )


@lru_cache(maxsize=4)
def load_taxonomy(path: str | Path = TAXONOMY_PATH) -> Taxonomy:
    return parse_taxonomy(read_yaml(path))
