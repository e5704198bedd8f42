"""What is wrong with an inbox entry, by file and line, before anything is listed.

The `sources` run turns a bad entry into rejects, but a user who dropped a file watches the
sensor: ``inbox_sensor`` turns its tick red with these messages (``sensors/inbox.py``). Only
the entry's text is read (capped); no variable is expanded, no path resolved, nothing fetched.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import yaml

from forge.media.inbox import InboxEntry
from forge.media.sources import SOURCE_TYPES

MAX_BYTES = 16 * 1024**2
MAX_PROBLEMS = 5  # per entry: the first few say enough
_SEARCH = re.compile(r"^[a-z]+search\d*:", re.IGNORECASE)  # ytsearch20:…, ytsearchdate5:…
_VAR = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}")


def _text(entry: InboxEntry) -> str:
    if entry.path.stat().st_size > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES // 1024**2} MiB")
    return entry.path.read_text(encoding="utf-8", errors="replace")


def is_url_line(line: str) -> bool:
    """An http(s) URL with a host, a ``${VAR}/…`` placeholder, or a ``ytsearchN:`` query."""
    if _SEARCH.match(line) or _VAR.match(line):
        return True
    try:
        parts = urlsplit(line)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc) and not any(c.isspace() for c in line)


def url_list_problems(entry: InboxEntry, text: str) -> list[str]:
    out = []
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and not line.startswith("#") and not is_url_line(line):
            shown = line if len(line) <= 60 else line[:57] + "..."
            out.append(f"{entry.name} line {n}: not a URL ({shown!r}); one http(s) URL a line, # for comments")
    if not out and not any(ln.strip() and not ln.strip().startswith("#") for ln in text.splitlines()):
        out.append(f"{entry.name} line 1: no URL in the file")
    return out


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def sources_file_problems(entry: InboxEntry, text: str) -> list[str]:
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return [f"{entry.name}{where}: malformed YAML ({what})"]
    if root is None:
        return [f"{entry.name} line 1: empty file; expected `sources:` with a list of sources"]
    top = dict((k.value, v) for k, v in root.value) if isinstance(root, yaml.MappingNode) else None
    if top is None or "sources" not in top:
        return [f"{entry.name} line {_line(root)}: not a sources file (a mapping with a `sources:` list)"]
    seq = top["sources"]
    if not isinstance(seq, yaml.SequenceNode):
        return [f"{entry.name} line {_line(seq)}: `sources:` must be a list of sources"]
    out = []
    for item in seq.value:
        if not isinstance(item, yaml.MappingNode):
            out.append(f"{entry.name} line {_line(item)}: a source must be a mapping (name, type, ...)")
            continue
        fields = {k.value: v for k, v in item.value}
        name, kind = fields.get("name"), fields.get("type")
        if not isinstance(name, yaml.ScalarNode) or not str(name.value).strip():
            out.append(f"{entry.name} line {_line(item)}: source without a `name`")
        if not isinstance(kind, yaml.ScalarNode) or kind.value not in SOURCE_TYPES:
            got = kind.value if isinstance(kind, yaml.ScalarNode) else None
            out.append(
                f"{entry.name} line {_line(kind or item)}: `type` must be one of {', '.join(SOURCE_TYPES)}, got {got!r}"
            )
    return out


def entry_problems(entry: InboxEntry) -> list[str]:
    """Messages ``<entry> line <n>: <reason>`` (at most ``MAX_PROBLEMS``); [] for a good entry,
    a folder, or a refused entry (that one is a reject of the `sources` run, with its reason)."""
    if entry.kind not in ("urls", "sources"):
        return []
    try:
        text = _text(entry)
    except (OSError, ValueError) as exc:
        return [f"{entry.name}: cannot be read ({exc})"]
    found = url_list_problems(entry, text) if entry.kind == "urls" else sources_file_problems(entry, text)
    more = len(found) - MAX_PROBLEMS
    return found[:MAX_PROBLEMS] + ([f"{entry.name}: {more} more problem(s)"] if more > 0 else [])
