"""The drop folder ``<data>/inbox/``: each entry becomes a sources file the `sources` asset lists.

An entry is one of

* ``<name>.txt``  — a URL list (one URL a line, ``#`` comments) → a ``urls`` source;
* ``<name>.yaml`` / ``<name>.yml`` — a sources file in the ``config/sources.yaml`` format, used as is;
* ``<name>/``     — a folder of media → a ``folder`` source (videos and images, recursive).

Generated sources files live in ``<inbox>/.sources/`` and are rewritten only when their
content changes. Source names of generated entries are ``inbox_<name>`` (sanitised), so
their batches (``inbox_<name>-0000``, ...) are recognisable; names declared inside a
dropped YAML are its own.

Anyone who can write to the inbox is untrusted (docs/security.md). An entry that is a link
leading out of the inbox, or not a regular file or folder (a FIFO, a device), is *refused*:
it is never opened, and the `sources` run records it as a reject (``inbox:<name>``) with its
reason. Everything an accepted entry names is held to the ingest policy
(``forge/media/policy.py``): variables, paths inside the roots, URLs, sizes.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

import yaml

from forge.media.policy import IngestPolicy, PolicyViolation, confine
from forge.storage.yaml_files import read_yaml

GENERATED = ".sources"
URL_LIST_EXTS = {".txt"}
SOURCES_EXTS = {".yaml", ".yml"}


@dataclass(frozen=True)
class InboxEntry:
    name: str  # file or folder name inside the inbox
    path: Path
    kind: str  # urls | sources | folder | refused
    mtime: float  # newest mtime of the entry (for a folder: of any file in it)
    reason: str = ""  # why a refused entry is refused (a reject reason code)
    detail: str = ""

    @property
    def source_name(self) -> str:
        return source_name_for(self.name)


def source_name_for(entry_name: str) -> str:
    stem = Path(entry_name).stem if not entry_name.endswith("/") else entry_name.rstrip("/")
    return "inbox_" + (re.sub(r"[^A-Za-z0-9_]", "_", stem).strip("_") or "unnamed")


MAX_SCANNED_FILES = 100_000  # files looked at per folder entry per tick


def _mtime(path: Path) -> float:
    """Newest mtime of a file, or of a folder and the files under it (links not followed)."""
    st = path.lstat()
    if not os.path.isdir(path) or path.is_symlink():
        return st.st_mtime
    newest, seen = st.st_mtime, 0
    for dirpath, _dirs, files in os.walk(path, followlinks=False):
        for f in files:
            try:
                newest = max(newest, os.lstat(os.path.join(dirpath, f)).st_mtime)
            except OSError:
                continue
            seen += 1
        if seen > MAX_SCANNED_FILES:
            break
    return newest


def _refusal(p: Path, inbox: Path) -> tuple[str, str] | None:
    """Why an inbox entry must not be opened, or None."""
    try:
        confine(p, IngestPolicy(roots=(str(inbox.resolve()),)), "inbox entry")
    except PolicyViolation as exc:
        return exc.reason, exc.detail
    st = p.stat()
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return "not_a_regular_file", f"inbox entry {p.name!r} is not a regular file or folder"
    return None


def scan_inbox(inbox: str | Path) -> list[InboxEntry]:
    """The entries of the inbox, sorted by name; hidden and unsupported files are ignored
    (a file still being copied shows up again with a newer mtime and is re-read then).
    Links out of the inbox and special files come back as ``refused`` entries."""
    inbox = Path(inbox)
    if not inbox.is_dir():
        return []
    out = []
    for p in sorted(inbox.iterdir()):
        if p.name.startswith((".", "_")):
            continue
        is_dir = p.is_dir()  # follows a link: a linked folder is checked below like the rest
        if is_dir:
            kind = "folder"
        elif p.suffix.lower() in URL_LIST_EXTS:
            kind = "urls"
        elif p.suffix.lower() in SOURCES_EXTS:
            kind = "sources"
        else:
            continue
        try:
            refused = _refusal(p, inbox)
            mtime = _mtime(p)
        except OSError as exc:  # vanished, dangling link, unreadable
            refused, mtime = ("missing_file", f"inbox entry {p.name!r} cannot be read ({type(exc).__name__})"), 0.0
        if refused is not None:
            out.append(InboxEntry(p.name, p, "refused", mtime, *refused))
        else:
            out.append(InboxEntry(p.name, p, kind, mtime))
    return out


def entry_sources_doc(entry: InboxEntry) -> dict:
    """The sources-file document for a URL list or a media folder."""
    if entry.kind == "urls":
        spec = {"name": entry.source_name, "type": "urls", "url_file": str(entry.path.resolve())}
    elif entry.kind == "folder":
        spec = {
            "name": entry.source_name,
            "type": "folder",
            "path": str(entry.path.resolve()),
            "media": "auto",
            "recursive": True,
        }
    else:
        raise ValueError(f"{entry.name}: a {entry.kind} entry is already a sources file")
    return {"sources": [spec]}


def entry_sources_file(entry: InboxEntry) -> Path:
    """Path of the sources file for ``entry`` (written under ``.sources/`` when generated)."""
    if entry.kind == "refused":
        raise ValueError(f"inbox entry {entry.name!r} is refused ({entry.reason}); it has no sources file")
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
    return [entry_sources_file(e) for e in scan_inbox(inbox) if e.kind != "refused"]


def entry_source_names(entry: InboxEntry) -> list[str]:
    """Names of the sources an entry declares (what its batch keys start with). Only names
    are read: no variable is expanded and no path is resolved here."""
    if entry.kind == "refused":
        return []
    if entry.kind != "sources":
        return [entry.source_name]
    try:
        if entry.path.stat().st_size > 16 * 1024**2:
            return []
        doc = read_yaml(entry.path, errors="replace")
    except (OSError, yaml.YAMLError):
        return []
    raw = doc.get("sources") if isinstance(doc, dict) else None
    names = [r.get("name") for r in raw if isinstance(r, dict)] if isinstance(raw, list) else []
    return [n for n in names if isinstance(n, str) and re.fullmatch(r"[A-Za-z0-9_]+", n)]


def batch_source(batch: str) -> str:
    """``<source>-<NNNN>`` → ``<source>``."""
    return batch.rsplit("-", 1)[0]


def list_with_inbox(
    sources_path: str | Path, inbox: str | Path | None, variables, log, lister=None, policy: IngestPolicy | None = None
):
    """The main sources file plus every inbox entry, as one :class:`forge.media.batch.Listing`.
    A source name declared again in a later file is a ``duplicate_source`` reject (first wins);
    a refused inbox entry is a reject with its reason."""
    import pandas as pd

    from forge.media.batch import Listing, list_sources

    paths = [Path(sources_path)]
    for entry in scan_inbox(inbox) if inbox is not None else []:
        if entry.kind == "refused":
            log.add(f"inbox:{entry.name}", entry.reason, "PolicyViolation", entry.detail)
        else:
            paths.append(entry_sources_file(entry))
    srcs, items, specs, seen = [], [], [], set()
    for path in paths:
        listing = list_sources(path, variables, log, lister, policy)
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
