"""Which releases exist: ``config/releases.yaml`` (``SUBTEXT_RELEASES_CONFIG`` points elsewhere)
plus the inbox folders ``<data>/inbox/_releases/<paper>/<name>/``.

A release folder may carry a ``release.yaml`` manifest (``version``, ``licence``,
``language``, ``options``); the config entry wins over it. Relative paths are relative to
the config file (or to the inbox folder).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from forge.benchmarks import registry
from forge.media.policy import environment_variables
from forge.media.sources import substitute
from forge.storage.yaml_files import read_yaml

DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "config" / "releases.yaml"
MANIFEST = "release.yaml"
# inside the media inbox, which skips names starting with "_" (a release is not a media drop)
INBOX_DIR = Path("inbox") / "_releases"
UNSPECIFIED = "unspecified"
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class ReleaseInfo:
    paper: str
    name: str  # partition key of the paper's release asset
    path: Path  # a folder or a single file
    version: str = UNSPECIFIED
    licence: str = UNSPECIFIED
    language: str = "en"
    options: dict[str, Any] = field(default_factory=dict)
    origin: str = "config"  # config | inbox
    # where the release's files may resolve to (forge/releases/files.py); empty: the release path
    roots: tuple[str, ...] = ()

    def option(self, key: str, default: Any = None) -> Any:
        return self.options.get(key, default)

    def describe(self) -> dict[str, Any]:
        return {
            "paper": self.paper,
            "name": self.name,
            "path": str(self.path),
            "version": self.version,
            "licence": self.licence,
            "language": self.language,
            "options": self.options,
            "from": self.origin,
            "roots": list(self.roots),
        }


def importing_papers() -> tuple[str, ...]:
    """The registered benchmarks that declare a release importer (``PaperHooks.parse_release``)."""
    return tuple(s.name for s in registry.specs() if s.hooks.overrides("parse_release"))


def config_path() -> Path:
    return Path(os.environ.get("SUBTEXT_RELEASES_CONFIG") or DEFAULT_CONFIG)


def _manifest(folder: Path) -> dict[str, Any]:
    m = folder / MANIFEST if folder.is_dir() else folder.parent / MANIFEST
    return (read_yaml(m) or {}) if m.is_file() else {}


def _info(
    paper: str, name: str, path: Path, entry: dict[str, Any], origin: str, roots: tuple[str, ...] = ()
) -> ReleaseInfo:
    papers = importing_papers()
    if paper not in papers:
        raise ValueError(f"release {name!r}: unknown paper {paper!r}; one of {list(papers)}")
    if not _KEY.match(name):
        raise ValueError(f"release name {name!r}: letters, digits, '.', '_' and '-' only (it is a partition key)")
    merged = {**_manifest(path), **{k: v for k, v in entry.items() if v is not None}}
    return ReleaseInfo(
        paper=paper,
        name=name,
        path=path,
        version=str(merged.get("version") or UNSPECIFIED),
        licence=str(merged.get("licence") or merged.get("license") or UNSPECIFIED),
        language=str(merged.get("language") or "en"),
        options=dict(merged.get("options") or {}),
        origin=origin,
        roots=roots,
    )


def load_releases(path: str | Path | None = None, data_dir: str | Path | None = None) -> list[ReleaseInfo]:
    """Every declared release: config entries first, then inbox folders not named in config."""
    cfg_file = Path(path or config_path())
    doc = read_yaml(cfg_file) if cfg_file.is_file() else {}
    out: list[ReleaseInfo] = []
    allowed = [str(_path(r, cfg_file)) for r in (doc or {}).get("allowed_roots") or []]
    data = [str(Path(data_dir).resolve())] if data_dir is not None else []
    for entry in (doc or {}).get("releases") or []:
        p = _path(entry["path"], cfg_file)
        own = [str(_path(r, cfg_file)) for r in entry.get("allowed_roots") or []]
        # the operator named this path: its resolved folder is a root (its files may not leave it)
        roots = tuple(dict.fromkeys([str(p.resolve()), *data, *allowed, *own]))
        out.append(_info(str(entry["paper"]), str(entry["name"]), p, entry, "config", roots))
    if data_dir is not None:
        inbox = Path(data_dir) / INBOX_DIR
        names = {(r.paper, r.name) for r in out}
        for paper in importing_papers():
            for folder in sorted((inbox / paper).glob("*")) if (inbox / paper).is_dir() else []:
                if not folder.name.startswith(".") and (paper, folder.name) not in names:
                    # a dropped folder is untrusted: the data dir and the allowed roots only
                    out.append(_info(paper, folder.name, folder, {}, "inbox", tuple(dict.fromkeys([*data, *allowed]))))
    return out


def _path(raw: Any, cfg_file: Path) -> Path:
    # the same ${VAR} rule as sources: only non-secret SUBTEXT_* (and allow-listed) names expand
    p = Path(substitute(str(raw), environment_variables(), set(os.environ)))
    return p if p.is_absolute() else (cfg_file.parent / p).resolve()


def release_info(
    paper: str, name: str, path: str | Path | None = None, data_dir: str | Path | None = None
) -> ReleaseInfo:
    for r in load_releases(path, data_dir):
        if r.paper == paper and r.name == name:
            return r
    raise KeyError(f"no {paper} release named {name!r} in {path or config_path()} or the inbox")


def with_options(info: ReleaseInfo, **options: Any) -> ReleaseInfo:
    return replace(info, options={**info.options, **options})
