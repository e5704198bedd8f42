"""Recipe settings: the paper package's ``config.yaml``, the paper's values plus named profiles.

The top-level keys of a recipe file are the paper's settings (the defaults). An optional
``profiles:`` mapping holds named overrides, deep-merged over them, e.g. ``profiles: {demo:
{candidates: {min_persons: 0}}}``: a deviation from the paper is always a named profile,
never an edited default. The profile is chosen per call, else by ``SUBTEXT_RECIPE_PROFILE``,
else ``paper`` (the file's top level as it is). ``SUBTEXT_<NAME>_CONFIG`` (e.g.
``SUBTEXT_MAIA_CONFIG``) points a recipe at another file.

Settings are read where they are used (not frozen in module constants at import), so a
process that changes the profile gets the new values; parsing is cached per file version.
"""

from __future__ import annotations

import copy
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from forge.benchmarks import registry
from forge.benchmarks.spec import EvalSpec
from forge.storage.location import local_base
from forge.storage.yaml_files import read_yaml

PAPER = "paper"
PROFILE_ENV = "SUBTEXT_RECIPE_PROFILE"


def config_path(name: str) -> Path:
    """The recipe's settings file: ``SUBTEXT_<NAME>_CONFIG`` or its package's ``config.yaml``."""
    path = registry.get(name).recipe_config_path()
    if path is None:
        raise ValueError(f"benchmark {name!r} has no recipe settings file")
    return path


PROFILE_FILE = "recipe_profile"  # in the data dir: the profile its tables were built with


def record_profile(profile: str, data_dir: str | os.PathLike[str] | None = None) -> None:
    """Remember the profile a data dir is built with: ``make ui`` on that data dir loads the same
    settings, so no stage shows Unsynced only because the UI was started without the demo's
    variable (for ``dg launch``: ``export SUBTEXT_RECIPE_PROFILE=$(cat data/recipe_profile)``)."""
    path = Path(data_dir) if data_dir else local_base()
    path.mkdir(parents=True, exist_ok=True)
    (path / PROFILE_FILE).write_text(profile + "\n")


def active_profile(name: str, profile: str | None = None) -> str:
    """The profile a recipe's settings come from: ``profile``, the env, else ``paper``.
    (``make ui`` sets the env from the data dir's recorded profile.)"""
    del name  # one env var for every recipe: a run uses one profile throughout
    return (profile or os.environ.get(PROFILE_ENV, "").strip() or PAPER).strip()


def merge(base: dict[str, Any], over: dict[str, Any], replace: tuple[str, ...] = ()) -> dict[str, Any]:
    """``base`` with ``over`` deep-merged in: mappings merge key by key, anything else (and the
    mappings under a key in ``replace``) replaces."""
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        deep = isinstance(v, dict) and isinstance(out.get(k), dict) and k not in replace
        out[k] = merge(out[k], v, replace) if deep else copy.deepcopy(v)
    return out


def effective(doc: dict[str, Any], profile: str, where: str = "recipe settings") -> dict[str, Any]:
    """A parsed recipe file's settings under ``profile`` (``profiles:`` itself removed)."""
    doc = dict(doc or {})
    named = doc.pop("profiles", None) or {}
    if profile == PAPER:
        return doc
    if profile not in named:
        known = ", ".join([PAPER, *sorted(named)])
        raise ValueError(f"unknown recipe profile {profile!r} for {where}; known profiles: {known}")
    return merge(doc, named[profile] or {})


@lru_cache(maxsize=64)
def _resolved(path: str, mtime_ns: int, profile: str) -> dict[str, Any]:
    return effective(read_yaml(path) or {}, profile, path)


def recipe_settings(name: str, profile: str | None = None) -> dict[str, Any]:
    """The recipe's effective settings for ``profile`` (see the module doc); a fresh copy."""
    path = config_path(name)
    return copy.deepcopy(_resolved(str(path), path.stat().st_mtime_ns, active_profile(name, profile)))


def profiles(name: str) -> list[str]:
    """Every profile the recipe's file defines, ``paper`` first."""
    doc = read_yaml(config_path(name)) or {}
    return [PAPER, *sorted((doc.get("profiles") or {}).keys())]


def with_profile(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """``df`` with the ``profile`` column: which settings profile made these item rows."""
    return df.assign(profile=active_profile(name)) if len(df) else df


def config_default(name: str, section: str, key: str, fallback: Any = None) -> Any:
    """A ``dg.Config`` field whose default is ``<section>.<key>`` of the recipe's settings,
    read when a run starts (``default_factory``), not frozen when the module was imported."""
    from pydantic import Field

    return Field(default_factory=lambda: (recipe_settings(name).get(section) or {}).get(key, fallback))


def profiles_of(extra: pd.Series) -> list[str]:
    """The profiles behind gated items (``profile`` folded into their ``extra`` JSON); items
    made before profiles existed, or imported from a release, count as ``unrecorded``."""
    import json

    found = set()
    for v in extra:
        try:
            found.add((json.loads(v) if isinstance(v, str) and v else {}).get("profile") or "unrecorded")
        except ValueError:
            found.add("unrecorded")
    return sorted(found)


def settings_hash(path: Path, profile: str) -> str | None:
    """sha256 (12 hex) of a recipe file's effective settings under ``profile``: what a card
    cites so two exports built with the same settings agree whatever else the file holds."""
    from forge.provenance.versioning import sha256_bytes

    try:
        doc = effective(read_yaml(path) or {}, profile, str(path))
    except (OSError, ValueError):
        return None
    return sha256_bytes(yaml.safe_dump(doc, sort_keys=True).encode())[:12]


def eval_defaults(ev: EvalSpec) -> dict[str, Any]:
    """A paper's evaluation defaults: those its spec declares, else its ``defaults_file`` (the
    package's ``evals.yaml``; a missing file is none), read here each time: the spec holds the path."""
    if ev.defaults or ev.defaults_file is None:
        return dict(ev.defaults)
    f = ev.defaults_file
    return (read_yaml(f) or {}) if f.is_file() else {}
