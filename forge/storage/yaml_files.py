"""The one reader of the project's YAML: configs, contracts, manifests, prompts, dropped sidecars.

A process that loads the code location reads about 140 YAML documents, 59 of them distinct, and
every code server, run worker and step process loads it again. Parsing goes through libyaml's
``CSafeLoader`` (the same safe schema as ``yaml.safe_load``; pure Python where PyYAML was built
without it), and a document already parsed in this process is not parsed again: the cache is keyed
by the text itself, so an edited file is always read anew. Each caller gets its own copy.
"""

from __future__ import annotations

import copy
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=256)
def _parsed(text: str) -> Any:
    return yaml.load(text, Loader=_LOADER)


def parse_yaml(text: str) -> Any:
    """What ``yaml.safe_load(text)`` gives, as a copy the caller may change."""
    return copy.deepcopy(_parsed(text))


def read_yaml(path: str | os.PathLike[str], errors: str = "strict") -> Any:
    """The YAML document in the file at ``path`` (UTF-8), parsed as ``parse_yaml`` does."""
    return parse_yaml(Path(path).read_text(encoding="utf-8", errors=errors))
