"""The drop folder ``<data>/inbox/``: each entry becomes a sources file the `sources` asset lists.

An entry is one of

* ``<name>.txt``  — a URL list (one URL a line, ``#`` comments) → a ``urls`` source;
* ``<name>.yaml`` / ``<name>.yml`` — a sources file in the ``config/sources.yaml`` format, used as is;
* ``<name>/``     — a folder of media → a ``folder`` source (videos and images, recursive).

Generated sources files live in ``<inbox>/.sources/`` and are rewritten only when their
content changes. Source names of generated entries are ``inbox_<name>`` (sanitised), so
their batches (``inbox_<name>-0000``, ...) are recognisable; names declared inside a
dropped YAML are its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from forge.media.sources import load_sources

GENERATED = ".sources"
URL_LIST_EXTS = {".txt"}
SOURCES_EXTS = {".yaml", ".yml"}


@dataclass(frozen=True)
class InboxEntry:
    name: str  # file or folder name inside the inbox
    path: Path
    kind: str  # urls | sources | folder
    mtime: float  # newest mtime of the entry (for a folder: of any file in it)

    @property
    def source_name(self) -> str:
        return source_name_for(self.name)


def source_name_for(entry_name: str) -> str:
    stem = Path(entry_name).stem if not entry_name.endswith("/") else entry_name.rstrip("/")
    return "inbox_" + (re.sub(r"[^A-Za-z0-9_]", "_", stem).strip("_") or "unnamed")


def _mtime(path: Path) -> float:
    if path.is_dir():
        times = [p.stat().st_mtime for p in path.rglob("*") if p.is_file()]
        return max([path.stat().st_mtime, *times])
    return path.stat().st_mtime


def scan_inbox(inbox: str | Path) -> list[InboxEntry]:
    """The entries of the inbox, sorted by name; hidden and unsupported files are ignored
    (a file still being copied shows up again with a newer mtime and is re-read then)."""
    inbox = Path(inbox)
    if not inbox.is_dir():
        return []
    out = []
    for p in sorted(inbox.iterdir()):
        if p.name.startswith((".", "_")):
            continue
        if p.is_dir():
            kind = "folder"
        elif p.suffix.lower() in URL_LIST_EXTS:
            kind = "urls"
        elif p.suffix.lower() in SOURCES_EXTS:
            kind = "sources"
        else:
            continue
        out.append(InboxEntry(p.name, p, kind, _mtime(p)))
    return out


def entry_sources_doc(entry: InboxEntry) -> dict:
    """The sources-file document for a URL list or a media folder."""
    if entry.kind == "urls":
        spec = {"name": entry.source_name, "type": "urls", "url_file": str(entry.path.resolve())}
    elif entry.kind == "folder":
        spec = {"name": entry.source_name, "type": "folder", "path": str(entry.path.resolve()),
                "media": "auto", "recursive": True}
    else:
        raise ValueError(f"{entry.name}: a {entry.kind} entry is already a sources file")
    return {"sources": [spec]}


def entry_sources_file(entry: InboxEntry) -> Path:
    """Path of the sources file for ``entry`` (written under ``.sources/`` when generated)."""
    if entry.kind == "sources":
        return entry.path
    out = entry.path.parent / GENERATED / f"{entry.source_name}.yaml"
    text = "# generated from the inbox entry " + entry.name + "; edit the entry, not this file\n"
    text += yaml.safe_dump(entry_sources_doc(entry), sort_keys=False)
    if not out.is_file() or out.read_text() != text:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(out)
    return out


def inbox_sources_files(inbox: str | Path) -> list[Path]:
    return [entry_sources_file(e) for e in scan_inbox(inbox)]


def entry_source_names(entry: InboxEntry) -> list[str]:
    """Names of the sources an entry declares (what its batch keys start with)."""
    if entry.kind != "sources":
        return [entry.source_name]
    try:
        specs, rejects = load_sources(entry.path)
    except (OSError, yaml.YAMLError):
        return []
    return [s.name for s in specs] + [r.source for r in rejects]


def batch_source(batch: str) -> str:
    """``<source>-<NNNN>`` → ``<source>``."""
    return batch.rsplit("-", 1)[0]


def list_with_inbox(sources_path: str | Path, inbox: str | Path | None, variables, log, lister=None):
    """The main sources file plus every inbox entry, as one :class:`forge.media.batch.Listing`.
    A source name declared again in a later file is a ``duplicate_source`` reject (first wins)."""
    import pandas as pd

    from forge.media.batch import Listing, list_sources

    paths = [Path(sources_path)] + (inbox_sources_files(inbox) if inbox is not None else [])
    srcs, items, specs, seen = [], [], [], set()
    for path in paths:
        listing = list_sources(path, variables, log, lister)
        for spec in listing.specs:
            if spec.name in seen:
                log.add(f"source:{spec.name}", "duplicate_source", "", f"{path}: source name already declared")
                continue
            seen.add(spec.name)
            specs.append(spec)
            if len(listing.sources):
                srcs.append(listing.sources[listing.sources["source"] == spec.name])
            if len(listing.items):
                items.append(listing.items[listing.items["source"] == spec.name])
    cat = lambda frames: pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()  # noqa: E731
    return Listing(cat(srcs), cat(items), specs)
