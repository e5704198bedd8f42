"""Sources declared in YAML, expanded into items and cut into batches.

A sources file (``config/sources.yaml``) looks like::

    defaults: {batch_size: 50, license_policy: any}
    sources:
      - name: cc_italy                  # [A-Za-z0-9_] only: it prefixes batch keys
        type: search                    # urls | search | folder | table
        query: "ytsearch20:vita quotidiana italiana"
        license_policy: creative_commons
        max_duration_s: 300
        max_items: 20
      - {name: loopback, type: urls, urls: ["${SAMPLE_SERVER}/bikes.mp4"]}
      - {name: local_videos, type: folder, path: "${SAMPLE_CORPUS}/videos", media: video}
      - {name: captions, type: table, path: "${SAMPLE_CORPUS}/table/captions.csv",
         image_column: image, caption_column: caption}

``${VAR}`` placeholders are resolved from the caller's variables, then from the
environment for allowed names only (the project's non-secret ``SUBTEXT_*`` settings and the
policy's ``allowed_variables``; ``forge/media/policy.py``); a source with an unresolved or
refused placeholder becomes a reject naming the variable (never its value), the others
still load. With an :class:`~forge.media.policy.IngestPolicy`, every local path must lie in
its roots and every URL must pass its network policy (docs/security.md).
Listing URL and search sources uses yt-dlp's metadata extraction (no download); a dead
URL is a reject row, never a failure.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import socket
from collections.abc import Callable, Collection, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from forge.media.policy import (
    IngestPolicy,
    PolicyViolation,
    check_url,
    confine,
    environment_variables,
    network_guard,
    read_text_capped,
    refused_variable_message,
    regular_file,
    variable_allowed,
)
from forge.media.table_lines import TableLine, csv_lines, jsonl_lines
from forge.storage.yaml_files import parse_yaml

VIDEO_EXTS = {".mp4", ".mkv", ".webm", ".mov", ".avi", ".m4v", ".mpg", ".mpeg", ".ts", ".flv"}
IMAGE_EXTS = {".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff"}
SOURCE_TYPES = ("urls", "search", "folder", "table")
LICENSE_POLICIES = ("any", "creative_commons")
_NAME = re.compile(r"^[A-Za-z0-9_]+$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_CC = re.compile(r"creative\s*commons|\bcc[- ]?(by|0|zero)\b|\bcc0\b", re.IGNORECASE)
_SEARCH = re.compile(r"^([a-z]+search)(\d*|all|date\d*):(.+)$", re.IGNORECASE | re.DOTALL)
_URLISH = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")  # anything with a scheme, http or not
MAX_YAML_NODES = 100_000  # aliases can make a small YAML expand to billions of nodes


class UnresolvedVariable(ValueError):
    pass


class RefusedVariable(ValueError):
    """A placeholder names a variable the policy does not expand (message: name only)."""


@dataclass(frozen=True)
class SourceSpec:
    name: str
    type: str
    urls: tuple[str, ...] = ()
    url_file: str | None = None
    query: str | None = None
    path: str | None = None
    media: str = "auto"  # folder sources: video | image | auto (by extension)
    recursive: bool = False
    image_column: str = "image"
    caption_column: str = "caption"
    license_policy: str = "any"
    license: str | None = None  # declared licence of local material, recorded as provenance
    max_duration_s: float | None = None
    max_items: int | None = None
    batch_size: int = 50
    subtitle_langs: tuple[str, ...] = ("en", "en.*")
    # (NAME, value) of each ``${NAME}`` the declaration used: ids are taken from the source as
    # declared, so a per-run value (the demo server's port, the data dir) never changes an id.
    placeholders: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, default=list)


@dataclass
class SourceItem:
    item_id: str
    source: str
    kind: str  # video | image
    origin: str  # url | search | folder | table
    url: str | None = None
    path: str | None = None
    caption: str | None = None
    title: str | None = None
    duration_s: float | None = None
    license: str | None = None
    batch: str = ""
    position: int = 0


@dataclass
class SourceReject:
    item_id: str
    source: str
    reason: str
    error_class: str = ""
    detail: str = ""


@dataclass
class Expansion:
    spec: SourceSpec
    items: list[SourceItem] = field(default_factory=list)
    rejects: list[SourceReject] = field(default_factory=list)


def item_id(kind: str, source: str, locator: str) -> str:
    """Stable id from the source and the item's locator (URL or path relative to the source;
    see :func:`declared_locator` for one that went through ``${...}`` substitution)."""
    prefix = "vid" if kind == "video" else "img"
    digest = hashlib.sha1(f"{source}\n{locator}".encode()).hexdigest()[:12]
    return f"{prefix}_{digest}"


def declared_locator(spec: SourceSpec, locator: str) -> str:
    """``locator`` as the sources file declares it: the value of every placeholder the source
    used is written back as ``${NAME}`` (longest value first). ``${SAMPLE_SERVER}/bikes.mp4`` is
    one item whatever port the server got, and so are the playlist entries served under it."""
    for name, value in sorted(spec.placeholders, key=lambda p: -len(p[1])):
        if value:
            locator = locator.replace(value, f"${{{name}}}")
    return locator


def batch_key(source: str, index: int) -> str:
    return f"{source}-{index:04d}"


def substitute(value: str, variables: Mapping[str, str], refused: Collection[str] = ()) -> str:
    """Replace ``${NAME}`` from ``variables`` (one pass: values are not expanded again)."""

    def repl(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in variables:
            return variables[name]
        if name in refused:
            raise RefusedVariable(refused_variable_message(name))
        raise UnresolvedVariable(f"placeholder ${{{name}}} is not set")

    return _VAR.sub(repl, value)


def _subst_tree(
    value: Any, variables: Mapping[str, str], refused: Collection[str] = (), budget: list[int] | None = None
) -> Any:
    budget = [MAX_YAML_NODES] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError(f"source has more than {MAX_YAML_NODES} values (YAML alias expansion?)")
    if isinstance(value, str):
        return substitute(value, variables, refused)
    if isinstance(value, list):
        return [_subst_tree(v, variables, refused, budget) for v in value]
    if isinstance(value, dict):
        return {k: _subst_tree(v, variables, refused, budget) for k, v in value.items()}
    return value


def source_variables(explicit: Mapping[str, str] | None, policy: IngestPolicy) -> tuple[dict[str, str], set[str]]:
    """Values ``${...}`` may take (explicit ones, then allowed environment variables) and the
    names present in the environment but refused (reported by name only)."""
    import os

    allowed = environment_variables(policy.allowed_variables)
    refused = {k for k in os.environ if not variable_allowed(k, policy.allowed_variables)} - set(explicit or {})
    return {**allowed, **(explicit or {})}, refused


def parse_spec(
    raw: Mapping[str, Any],
    defaults: Mapping[str, Any],
    base_dir: Path,
    variables: Mapping[str, str],
    policy: IngestPolicy | None = None,
    refused: Collection[str] = (),
    url_rejects: list[SourceReject] | None = None,
) -> SourceSpec:
    """One declared source, placeholders resolved and paths confined. With ``url_rejects``, a URL
    of ``urls`` whose placeholder is unset or not allowed is refused there, on its own (the
    source keeps its other URLs); without, it makes the whole source invalid."""
    policy = policy or IngestPolicy()
    if not isinstance(raw, Mapping):
        raise ValueError(f"a source must be a mapping, got {type(raw).__name__}")
    declared = {**defaults, **raw}
    bad_urls: list[tuple[int, str, ValueError]] = []
    if url_rejects is not None and isinstance(declared.get("urls"), list):
        declared["urls"], bad_urls = _resolvable_urls(declared["urls"], variables, refused)
    doc = _subst_tree(declared, variables, refused)
    name = str(doc.get("name", ""))
    if not _NAME.match(name):
        raise ValueError(f"source name {name!r} must match [A-Za-z0-9_]+ (it prefixes batch keys)")
    if doc.get("type") not in SOURCE_TYPES:
        raise ValueError(f"source {name}: type must be one of {SOURCE_TYPES}, got {doc.get('type')!r}")
    if doc.get("license_policy", "any") not in LICENSE_POLICIES:
        raise ValueError(f"source {name}: license_policy must be one of {LICENSE_POLICIES}")
    for key in ("path", "url_file"):
        if doc.get(key):
            if not isinstance(doc[key], str):
                raise ValueError(f"source {name}: {key} must be a string")
            p = Path(doc[key]) if Path(doc[key]).is_absolute() else base_dir / doc[key]
            doc[key] = str(confine(p, policy, key))  # '..' and symlinks resolved, then confined
    known = set(SourceSpec.__dataclass_fields__) - {"placeholders"}  # set here, never declared
    unknown = set(doc) - known
    if unknown:
        raise ValueError(f"source {name}: unknown keys {sorted(unknown)}")
    for key in ("urls", "subtitle_langs"):
        if key in doc:
            if doc[key] is not None and not isinstance(doc[key], list):
                raise ValueError(f"source {name}: {key} must be a list")
            doc[key] = tuple(doc[key] or ())
    _check_types(name, doc)
    # the URL as declared in each message: placeholder names, never values
    details = [f"urls[{k}] {url!r}: {exc}" for k, url, exc in bad_urls]
    if bad_urls and not doc.get("urls") and not doc.get("url_file"):  # no URL left: the source is refused
        raise type(bad_urls[0][2])("; ".join(details))
    for (_, url, exc), detail in zip(bad_urls, details, strict=True):  # bad_urls: only with url_rejects
        reason = "variable_not_allowed" if isinstance(exc, RefusedVariable) else "unresolved_variable"
        if url_rejects is not None:
            url_rejects.append(SourceReject(item_id("video", name, url), name, reason, type(exc).__name__, detail))
    used = sorted(set(_VAR.findall(json.dumps(declared, default=str))))  # substitution succeeded: all are set
    return SourceSpec(**doc, placeholders=tuple((n, variables[n]) for n in used))


def _resolvable_urls(
    urls: list[Any], variables: Mapping[str, str], refused: Collection[str]
) -> tuple[list[Any], list[tuple[int, str, ValueError]]]:
    """The declared URLs whose placeholders all resolve (as declared, substituted later), and
    (index, URL, error) of the others. Entries that are not strings stay for the type check."""
    kept, bad = [], []
    for k, url in enumerate(urls):
        if isinstance(url, str):
            try:
                substitute(url, variables, refused)
            except (UnresolvedVariable, RefusedVariable) as exc:
                bad.append((k, url, exc))
                continue
        kept.append(url)
    return kept, bad


_STR_KEYS = (
    "type",
    "url_file",
    "query",
    "path",
    "media",
    "image_column",
    "caption_column",
    "license_policy",
    "license",
)


def _check_types(name: str, doc: Mapping[str, Any]) -> None:
    """A dropped YAML may hold anything: wrong types are an ``invalid_source``, not a crash later."""
    if len(name) > 64:
        raise ValueError("source name longer than 64 characters")
    for key in _STR_KEYS:
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise ValueError(f"source {name}: {key} must be a string")
    for key in ("urls", "subtitle_langs"):
        if not all(isinstance(v, str) for v in doc.get(key) or ()):
            raise ValueError(f"source {name}: every entry of {key} must be a string")
    if doc.get("media", "auto") not in ("video", "image", "auto"):
        raise ValueError(f"source {name}: media must be video, image or auto")
    if not isinstance(doc.get("recursive", False), bool):
        raise ValueError(f"source {name}: recursive must be true or false")
    bs = doc.get("batch_size", 50)
    if isinstance(bs, bool) or not isinstance(bs, int) or bs < 1:
        raise ValueError(f"source {name}: batch_size must be a positive integer")
    mi = doc.get("max_items")
    if mi is not None and (isinstance(mi, bool) or not isinstance(mi, int) or mi < 0):
        raise ValueError(f"source {name}: max_items must be a non-negative integer")
    md = doc.get("max_duration_s")
    if md is not None and (isinstance(md, bool) or not isinstance(md, (int, float)) or md < 0):
        raise ValueError(f"source {name}: max_duration_s must be a non-negative number")


def _file_reject(path: Path, reason: str, exc: BaseException) -> SourceReject:
    name = "file_" + re.sub(r"[^A-Za-z0-9_]", "_", path.stem)[:60]
    detail = exc.detail if isinstance(exc, PolicyViolation) else f"{path.name}: {type(exc).__name__}: {exc}"
    return SourceReject(f"sources_file:{path.name}", name, reason, type(exc).__name__, detail[:500])


def load_sources(
    path: str | Path, variables: Mapping[str, str] | None = None, policy: IngestPolicy | None = None
) -> tuple[list[SourceSpec], list[SourceReject]]:
    """Parse a sources file. A source that cannot be parsed (bad keys, unresolved or
    refused placeholder, path outside the policy's roots) is returned as a reject; the
    others load. A file that is not a readable sources document is one reject."""
    policy = policy or IngestPolicy()
    path = Path(path).absolute()  # `config/sources.yaml` is relative to the working directory
    try:
        regular_file(path, "sources file")
        text = read_text_capped(path, IngestPolicy(max_text_file_bytes=policy.max_text_file_bytes), "sources file")
        doc = parse_yaml(text) or {}
    except PolicyViolation as exc:
        return [], [_file_reject(path, exc.reason, exc)]
    except yaml.YAMLError as exc:
        return [], [_file_reject(path, "invalid_yaml", exc)]
    if (
        not isinstance(doc, Mapping)
        or not isinstance(doc.get("sources") or [], list)
        or not isinstance(doc.get("defaults") or {}, Mapping)
    ):
        return [], [
            _file_reject(path, "invalid_source", ValueError("not a sources document (a mapping with a `sources` list)"))
        ]
    env, refused = source_variables(variables, policy)
    defaults = doc.get("defaults") or {}
    specs, rejects, seen = [], [], set()
    for i, raw in enumerate(doc.get("sources") or []):
        given = raw.get("name") if isinstance(raw, Mapping) else None
        name = re.sub(r"[\x00-\x1f\x7f]", "?", given)[:100] if isinstance(given, str) and given else f"source_{i}"
        try:
            url_rejects: list[SourceReject] = []
            spec = parse_spec(raw, defaults, path.parent, env, policy, refused, url_rejects)
            if spec.name in seen:
                raise ValueError(f"source name {spec.name!r} declared twice")
            seen.add(spec.name)
            specs.append(spec)
            rejects += url_rejects  # a URL with an unset or refused placeholder: that URL only
        except UnresolvedVariable as exc:
            rejects.append(SourceReject(f"source:{name}", name, "unresolved_variable", type(exc).__name__, str(exc)))
        except RefusedVariable as exc:
            rejects.append(SourceReject(f"source:{name}", name, "variable_not_allowed", type(exc).__name__, str(exc)))
        except PolicyViolation as exc:
            rejects.append(SourceReject(f"source:{name}", name, exc.reason, type(exc).__name__, exc.detail))
        except (ValueError, TypeError, RecursionError) as exc:
            rejects.append(SourceReject(f"source:{name}", name, "invalid_source", type(exc).__name__, str(exc)[:500]))
    return specs, rejects


# -- policies ------------------------------------------------------------------------


def license_allowed(policy: str, license_text: str | None) -> tuple[bool, str]:
    if policy == "any":
        return True, ""
    if policy == "creative_commons":
        if not license_text:
            return False, "no licence in metadata (policy: creative_commons)"
        if _CC.search(license_text):
            return True, ""
        return False, f"licence {license_text!r} is not Creative Commons"
    return False, f"unknown licence policy {policy!r}"


def duration_allowed(max_s: float | None, duration: float | None) -> tuple[bool, str]:
    if max_s is None or duration is None:
        return True, ""
    if duration > max_s:
        return False, f"duration {duration:.1f}s > max {max_s:.1f}s"
    return True, ""


# -- expansion -----------------------------------------------------------------------

# (url, spec) -> info dict from yt-dlp metadata extraction (download=False); raises on a dead URL.
Lister = Callable[[str, SourceSpec], dict[str, Any]]


def _classify_media(path: Path, media: str) -> str | None:
    ext = path.suffix.lower()
    if media in ("video", "auto") and ext in VIDEO_EXTS:
        return "video"
    if media in ("image", "auto") and ext in IMAGE_EXTS:
        return "image"
    return None


def _reject_policy(out: Expansion, iid: str, exc: PolicyViolation) -> None:
    out.rejects.append(SourceReject(iid, out.spec.name, exc.reason, type(exc).__name__, exc.detail))


def _folder_files(root: Path, recursive: bool, limit: int) -> list[Path]:
    """Files under ``root`` without following links to folders (a link can point anywhere)."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        found += [Path(dirpath) / f for f in filenames]
        if not recursive:
            dirnames.clear()
        if len(found) > limit:
            break
    return sorted(found)


def _expand_folder(spec: SourceSpec, out: Expansion, policy: IngestPolicy) -> None:
    root = Path(spec.path or "")
    try:
        root = confine(root, policy, "folder")
    except PolicyViolation as exc:
        _reject_policy(out, f"source:{spec.name}", exc)
        return
    if not root.is_dir():
        out.rejects.append(
            SourceReject(
                f"source:{spec.name}", spec.name, "missing_path", "FileNotFoundError", f"folder {root} does not exist"
            )
        )
        return
    files = _folder_files(root, spec.recursive, policy.max_folder_files)
    if len(files) > policy.max_folder_files:
        out.rejects.append(
            SourceReject(
                f"source:{spec.name}",
                spec.name,
                "too_many_files",
                "",
                f"more than {policy.max_folder_files} files; the first ones are listed",
            )
        )
        files = files[: policy.max_folder_files]
    for p in files:
        kind = _classify_media(p, spec.media)
        if kind is None:
            continue  # sidecars (.vtt, .srt), notes, ...
        rel = p.relative_to(root).as_posix()
        iid = item_id(kind, spec.name, rel)  # relative to the folder: the same wherever it lies
        try:
            real = confine(p, policy, "file")  # a link inside the folder may lead outside it
            regular_file(real)
        except PolicyViolation as exc:
            _reject_policy(out, iid, exc)
            continue
        out.items.append(SourceItem(iid, spec.name, kind, "folder", path=str(p), title=p.stem, license=spec.license))


def _read_table(path: Path, policy: IngestPolicy) -> list[TableLine]:
    """Every data line of a CSV or JSONL table; a bad line is refused on its own, with its number.
    A file that cannot be read at all (size, encoding, a CSV header) raises."""
    text = read_text_capped(path, policy, "table")
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return jsonl_lines(text)
    return csv_lines(text)


def _expand_table(spec: SourceSpec, out: Expansion, policy: IngestPolicy) -> None:
    path = Path(spec.path or "")
    try:
        lines = _read_table(path, policy)
    except PolicyViolation as exc:
        _reject_policy(out, f"source:{spec.name}", exc)
        return
    except (OSError, ValueError, csv.Error) as exc:
        out.rejects.append(
            SourceReject(f"source:{spec.name}", spec.name, "unreadable_table", type(exc).__name__, str(exc))
        )
        return
    for n, tl in enumerate(lines):
        if tl.row is None:  # this line only: the others are read
            iid = item_id("image", spec.name, declared_locator(spec, f"{path.name}:line{tl.line}"))
            out.rejects.append(
                SourceReject(iid, spec.name, "bad_line", "", f"{path.name} line {tl.line}: {tl.refused}")
            )
            continue
        _table_row(spec, out, policy, path, n, tl)


def _table_row(spec: SourceSpec, out: Expansion, policy: IngestPolicy, path: Path, n: int, tl: TableLine) -> None:
    """One row of a table source: an item, or a reject naming the row's line."""
    row, where = tl.row or {}, f"line {tl.line}"
    ref = str(row.get(spec.image_column) or "").strip()
    caption = row.get(spec.caption_column)
    locator = ref or f"row{n}"
    iid = item_id("image", spec.name, declared_locator(spec, locator))
    if not ref:
        out.rejects.append(SourceReject(iid, spec.name, "missing_image", "", f"{where}: empty {spec.image_column!r}"))
        return
    is_url = bool(_URLISH.match(ref)) and not Path(ref).is_absolute()
    local = None
    try:
        if is_url:
            check_url(ref, policy)  # file://, data:, loopback ... refused before any request
        else:
            local = confine(Path(ref) if Path(ref).is_absolute() else path.parent / ref, policy, f"{where} image")
    except PolicyViolation as exc:
        _reject_policy(out, iid, exc)
        return
    except ValueError as exc:  # a NUL in the path: no file can have that name
        out.rejects.append(SourceReject(iid, spec.name, "invalid_path", type(exc).__name__, f"{where}: {exc}"))
        return
    if local is not None and not local.is_file():
        out.rejects.append(
            SourceReject(iid, spec.name, "missing_image", "FileNotFoundError", f"{where}: {Path(ref).name} not found")
        )
        return
    out.items.append(
        SourceItem(
            iid,
            spec.name,
            "image",
            "table",
            url=ref if is_url else None,
            path=str(local) if local else None,
            caption=None if caption is None else str(caption),
            license=spec.license,
        )
    )


def _urls_of(spec: SourceSpec, policy: IngestPolicy) -> list[str]:
    urls = list(spec.urls)
    if spec.url_file:
        for line in read_text_capped(Path(spec.url_file), policy, "URL list").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                urls.append(line)
    return urls


def _item_from_info(spec: SourceSpec, url: str, info: Mapping[str, Any], origin: str) -> SourceItem:
    return SourceItem(
        item_id("video", spec.name, declared_locator(spec, url)),
        spec.name,
        "video",
        origin,
        url=url,
        title=info.get("title"),
        duration_s=_float(info.get("duration")),
        license=info.get("license"),
    )


def _prefilter(spec: SourceSpec, item: SourceItem, out: Expansion) -> bool:
    """Apply licence/duration policy where listing metadata already has them (search
    results often lack the licence: `videos` decides then, from the full metadata)."""
    if item.license:
        ok, why = license_allowed(spec.license_policy, item.license)
        if not ok:
            out.rejects.append(SourceReject(item.item_id, spec.name, "license", "", why))
            return False
    ok, why = duration_allowed(spec.max_duration_s, item.duration_s)
    if not ok:
        out.rejects.append(SourceReject(item.item_id, spec.name, "too_long", "", why))
        return False
    return True


def _listed(lister: Lister, target: str, spec: SourceSpec, policy: IngestPolicy) -> dict[str, Any]:
    """``lister(target)`` with every connection it makes held to the network policy."""
    with network_guard(policy) as guard:
        try:
            return lister(target, spec)
        except Exception as exc:
            if guard.refused:
                raise PolicyViolation(
                    "address_not_allowed",
                    f"a request went to {guard.refused[0]}, a non-public address (a redirect?); refused",
                ) from exc
            raise


def _expand_urls(spec: SourceSpec, out: Expansion, lister: Lister, policy: IngestPolicy) -> None:
    try:
        urls = _urls_of(spec, policy)
    except PolicyViolation as exc:
        _reject_policy(out, f"source:{spec.name}", exc)
        return
    if len(urls) > policy.max_urls_per_source:
        out.rejects.append(
            SourceReject(
                f"source:{spec.name}",
                spec.name,
                "too_many_urls",
                "",
                f"{len(urls)} URLs > {policy.max_urls_per_source}; the first ones are listed",
            )
        )
        urls = urls[: policy.max_urls_per_source]
    for url in urls:
        iid = item_id("video", spec.name, declared_locator(spec, url))
        try:
            check_url(url, policy)
            info = _listed(lister, url, spec, policy)
        except PolicyViolation as exc:
            _reject_policy(out, iid, exc)
            continue
        except Exception as exc:  # noqa: BLE001 - yt-dlp raises many types; a dead URL is a reject
            reason, detail = classify_error(exc)
            out.rejects.append(SourceReject(iid, spec.name, reason, type(exc).__name__, detail))
            continue
        entries = info.get("entries")
        if entries is not None:  # a playlist / channel URL: each entry is an item
            for e in list(entries)[: policy.max_playlist_items]:
                if e:
                    eurl = e.get("webpage_url") or e.get("url")
                    if eurl:
                        item = _item_from_info(spec, eurl, e, "url")
                        if _prefilter(spec, item, out):
                            out.items.append(item)
            continue
        item = _item_from_info(spec, url, info, "url")
        if _prefilter(spec, item, out):
            out.items.append(item)


def search_query(query: str, policy: IngestPolicy) -> str:
    """``<site>search<N>:<words>`` with N capped at the playlist cap (``all`` → the cap)."""
    m = _SEARCH.match(query.strip())
    if not m:
        raise PolicyViolation("unsupported_url", "a search query must look like 'ytsearch20:words'")
    key, count, words = m.groups()
    date = count.lower().startswith("date")
    digits = count[4:] if date else count
    if digits == "":
        n = 1  # yt-dlp's meaning of a bare 'ytsearch:'
    elif digits.lower() == "all":
        n = policy.max_playlist_items
    else:
        n = min(int(digits), policy.max_playlist_items)
    return f"{key}{'date' if date else ''}{n}:{words}"


def _expand_search(spec: SourceSpec, out: Expansion, lister: Lister, policy: IngestPolicy) -> None:
    try:
        query = search_query(spec.query or "", policy)
        info = _listed(lister, query, spec, policy)
    except PolicyViolation as exc:
        _reject_policy(out, f"source:{spec.name}", exc)
        return
    except Exception as exc:  # noqa: BLE001
        reason, detail = classify_error(exc)
        out.rejects.append(SourceReject(f"source:{spec.name}", spec.name, reason, type(exc).__name__, detail))
        return
    for e in list(info.get("entries") or [])[: policy.max_playlist_items]:
        if not e:
            continue
        eurl = e.get("webpage_url") or e.get("url")
        if not eurl:
            continue
        item = _item_from_info(spec, eurl, e, "search")
        if _prefilter(spec, item, out):
            out.items.append(item)


def expand_source(spec: SourceSpec, lister: Lister | None = None, policy: IngestPolicy | None = None) -> Expansion:
    policy = policy or IngestPolicy()
    out = Expansion(spec)
    if spec.type == "folder":
        _expand_folder(spec, out, policy)
    elif spec.type == "table":
        _expand_table(spec, out, policy)
    elif spec.type == "urls":
        _expand_urls(spec, out, lister or ytdlp_lister(max_items=policy.max_playlist_items), policy)
    elif spec.type == "search":
        _expand_search(spec, out, lister or ytdlp_lister(max_items=policy.max_playlist_items), policy)
    # Same locator twice (a URL listed twice): keep the first.
    seen: set[str] = set()
    unique = []
    for it in out.items:
        if it.item_id in seen:
            out.rejects.append(SourceReject(it.item_id, spec.name, "listed_twice", "", it.url or it.path or ""))
            continue
        seen.add(it.item_id)
        unique.append(it)
    if spec.max_items is not None and len(unique) > spec.max_items:
        for it in unique[spec.max_items :]:
            out.rejects.append(
                SourceReject(it.item_id, spec.name, "max_items", "", f"beyond max_items={spec.max_items}")
            )
        unique = unique[: spec.max_items]
    for n, it in enumerate(unique):
        it.position = n
        it.batch = batch_key(spec.name, n // max(1, spec.batch_size))
    out.items = unique
    return out


# -- yt-dlp listing ------------------------------------------------------------------


def ytdlp_base_options(socket_timeout_s: float = 20.0, retries: int = 3) -> dict[str, Any]:
    return {
        "quiet": True,
        "no_warnings": True,
        "noprogress": True,
        "socket_timeout": socket_timeout_s,
        "retries": retries,
        "fragment_retries": retries,
        "extractor_retries": retries,
        "file_access_retries": 1,
        "noplaylist": False,
        "ignoreerrors": False,
        "logger": _SilentLogger(),
        "cachedir": False,  # no shared ~/.cache/yt-dlp
        "concurrent_fragment_downloads": 1,  # fragments in this thread, where the network guard is active
    }


class _SilentLogger:
    """yt-dlp prints errors itself before raising; we record them as rejects instead."""

    def debug(self, msg: str) -> None:
        pass

    info = warning = debug

    def error(self, msg: str) -> None:
        pass


def ytdlp_lister(socket_timeout_s: float = 20.0, retries: int = 3, max_items: int = 200) -> Lister:
    import yt_dlp

    def lister(url: str, spec: SourceSpec) -> dict[str, Any]:
        opts = ytdlp_base_options(socket_timeout_s, retries)
        # Flat listing: a search or playlist returns its entries without resolving each one.
        opts["extract_flat"] = "in_playlist"
        opts["playlistend"] = max_items  # the playlist cap, applied by yt-dlp while paging
        with yt_dlp.YoutubeDL(opts) as ydl:
            info = ydl.extract_info(url, download=False)
        return ydl.sanitize_info(info) if info else {}

    return lister


_ERROR_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("address_not_allowed", re.compile(r"address_not_allowed", re.I)),
    ("too_large", re.compile(r"larger than max-filesize|too_large", re.I)),
    ("not_found", re.compile(r"HTTP Error 404|HTTP Error 410|404: not found", re.I)),
    ("private", re.compile(r"private video|sign in|login required|members-only", re.I)),
    (
        "geo_blocked",
        re.compile(r"geo[- ]?(restrict|block)|not available (in|from) your (country|location|region)", re.I),
    ),
    ("removed", re.compile(r"removed|terminated|deleted|no longer available|copyright", re.I)),
    ("timeout", re.compile(r"timed? ?out|timeout", re.I)),
    (
        "connection_failed",
        re.compile(r"connection refused|name or service not known|unreachable|connection reset", re.I),
    ),
    ("unsupported_url", re.compile(r"unsupported url", re.I)),
    ("unavailable", re.compile(r"unavailable", re.I)),
    ("not_found", re.compile(r"not found", re.I)),
]


def _socket_failure(exc: BaseException) -> str | None:
    """``timeout`` / ``connection_failed`` from the types in the exception's chain (urllib keeps
    the socket error in ``URLError.reason``; others chain it as the cause), None if none is."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, TimeoutError):
            return "timeout"
        if isinstance(e, ConnectionError | socket.gaierror):  # refused, reset, aborted; a failed lookup
            return "connection_failed"
        inner = getattr(e, "reason", None)
        e = inner if isinstance(inner, BaseException) else (e.__cause__ or e.__context__)
    return None


def classify_error(exc: BaseException) -> tuple[str, str]:
    """A short stable reason code for a yt-dlp or network failure, plus its message: the one
    classifier for video downloads, listings and image URLs, so a refused connection is
    ``connection_failed`` wherever it happens."""
    if isinstance(exc, PolicyViolation):
        return exc.reason, exc.detail
    text = str(exc)
    name = type(exc).__name__
    if name == "GeoRestrictedError":
        return "geo_blocked", text
    if isinstance(exc, TimeoutError) or "Timeout" in name:
        return "timeout", text
    failure = _socket_failure(exc)
    if failure:
        return failure, text
    for reason, pat in _ERROR_PATTERNS:
        if pat.search(text):
            return reason, text
    return "download_failed", text


def _float(v: Any) -> float | None:
    try:
        return None if v is None else float(v)
    except (TypeError, ValueError):
        return None


def now_utc() -> datetime:
    return datetime.now(UTC)
