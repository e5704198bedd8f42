"""VAGUE's physical-object filter on the tag vocabulary (§4.1.2).

The official pipeline keeps, of each image's RAM tags, only those on its physical-object list,
counts them to rank the images (the richest 4,000 kept) and picks target objects among them. Here
the list is ``physical_objects`` in config/vision.yaml (``objects`` and ``never``), applied to the
tags of every tagger backend: RAM's open tags and the YOLO class-name fallback alike. People are
never objects (they are the addressees), so "person" cannot satisfy ``min_tags``, become a target
object, or rank a scene.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from forge.benchmarks.spec import ROOT
from forge.storage.yaml_files import read_yaml

from . import lexicon

VISION_CONFIG = ROOT / "config" / "vision.yaml"  # the project's shared vision settings
FILTERS = ("physical_objects", "none")  # assets/recipes/vague/config.yaml candidates.object_filter


def _key(tag: str) -> tuple[str, ...]:
    """Match key of a tag: its lemmas ("cups" → cup, "wine glasses" → wine glass)."""
    return tuple(lexicon.lemmas(str(tag)))


@dataclass(frozen=True)
class ObjectFilter:
    """Which tags are physical objects (an empty ``objects`` list keeps every tag but ``never``)."""

    objects: frozenset[tuple[str, ...]]
    never: frozenset[tuple[str, ...]]
    name: str = "physical_objects"

    def is_object(self, tag: str) -> bool:
        key = _key(tag)
        if not key or key in self.never:
            return False
        return not self.objects or key in self.objects

    def keep(self, tags: Iterable[str]) -> list[str]:
        """The physical-object tags, in order."""
        return [t for t in tags if self.is_object(t)]


def object_filter(name: str = "physical_objects", config: dict[str, Any] | None = None) -> ObjectFilter:
    """The named filter: ``physical_objects`` (the paper's, from config/vision.yaml) or ``none``
    (every tag counts, people excepted: a deviation, for vocabularies with no list yet)."""
    if name not in FILTERS:
        raise ValueError(f"unknown VAGUE object_filter {name!r}; known: {list(FILTERS)}")
    cfg = config if config is not None else (read_yaml(VISION_CONFIG) or {})
    block = cfg.get("physical_objects") or {}
    never = frozenset(_key(t) for t in block.get("never") or ["person"])
    if name == "none":
        return ObjectFilter(frozenset(), never, name)
    objects = frozenset(_key(t) for t in block.get("objects") or [])
    if not objects:
        raise ValueError("config/vision.yaml physical_objects.objects is empty: list the physical objects")
    return ObjectFilter(objects, never, name)
