"""What every release parser shares: reading the released files in any of their forms,
the result type, media placement and the provenance columns of an imported item."""

from __future__ import annotations

import json
import math
import os
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from forge.media.table_lines import TableLine, csv_lines, jsonl_lines
from forge.releases.config import ReleaseInfo
from forge.releases.files import ReleaseFiles, scan
from forge.storage import safe_name

TABLE_SUFFIXES = (".json", ".jsonl", ".csv", ".tsv", ".parquet")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp")
VIDEO_SUFFIXES = (".mp4", ".webm", ".mkv", ".mov", ".avi")


@dataclass
class Reject:
    record: str  # where in the release: "<file>#<row or key>"
    reason: str  # stable code
    detail: str


@dataclass
class ParsedRelease:
    """One release parsed: item rows (the paper's item columns + provenance), rejects with
    reasons, and notes — values kept as they are but worth reporting (unknown categories,
    figures outside the taxonomy, repairs). ``media`` maps each item media path (relative to
    the data dir) to the released file it comes from."""

    items: pd.DataFrame
    rejects: list[Reject] = field(default_factory=list)
    notes: Counter = field(default_factory=Counter)
    unknown: dict[str, Counter] = field(default_factory=dict)
    media: dict[str, Path | bytes] = field(default_factory=dict)  # a file, or bytes embedded in a table
    records: int = 0
    extra_tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    # unit (questions, pairs, records ...) -> {"offered": n, "imported": m}: the import report
    units: dict[str, dict[str, int]] = field(default_factory=dict)
    # figure -> (this release, the paper's table or None): the release's own statistics
    stats: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def reject(self, record: str, reason: str, detail: str) -> None:
        self.rejects.append(Reject(record, reason, detail))

    def count(self, unit: str, offered: int, imported: int) -> None:
        self.units[unit] = {"offered": int(offered), "imported": int(imported)}

    def keep_unknown(self, kind: str, value: Any) -> None:
        """An unknown value kept in the item (never dropped) and counted for the report."""
        self.unknown.setdefault(kind, Counter())[str(value)] += 1

    def summary(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "items": len(self.items),
            "rejects": len(self.rejects),
            "rejects_by_reason": dict(Counter(r.reason for r in self.rejects)),
            "reject_examples": reject_examples(self.rejects),
            "units": self.units,
            "notes": dict(self.notes),
            "unknown_values": {k: dict(v) for k, v in self.unknown.items()},
        }


def reject_examples(rejects: Iterable[Reject], k: int = 3) -> dict[str, list[str]]:
    """The first ``k`` rejects of each reason, as ``record: detail``."""
    out: dict[str, list[str]] = {}
    for r in rejects:
        ex = out.setdefault(r.reason, [])
        if len(ex) < k:
            ex.append(f"{r.record}: {r.detail}")
    return out


def open_release(info: ReleaseInfo, out: ParsedRelease) -> ReleaseFiles:
    """The release's files (folder links followed, held to its roots: ``forge/releases/files.py``);
    every file that resolves outside the roots is a reject ``symlink_escape`` naming the setting
    that allows it."""
    files = scan(info)
    for f in files.escaped:
        out.reject(files.label(f), "symlink_escape", files.escape_detail(f))
    return files


def table_files(files: ReleaseFiles) -> list[Path]:
    """The release's data files (JSON / JSONL / CSV / TSV / Parquet)."""
    return files.with_suffix(TABLE_SUFFIXES)


def file_label(files: ReleaseFiles, f: Path) -> str:
    """How rejects name a released file: its path inside the release folder (``gen/train.parquet``)."""
    return files.label(f)


UNPARSABLE = "__unparsable__"  # a record that stands for a refused line: why, and ``LINE`` its number
LINE = "__line__"


def read_table(path: Path) -> Any:
    """A released file as Python data: JSON as it is (list, dict of records, nested), JSONL
    and CSV / TSV / Parquet as a list of row dicts (CSV cells stay strings). A line of a JSONL
    or CSV / TSV file that cannot be read is a record ``{UNPARSABLE: "line N: why", LINE: N}``
    in its place (the importers reject it, with its line); the other lines are read."""
    suf = path.suffix.lower()
    if suf == ".json":
        text = path.read_text(encoding="utf-8-sig")
        try:
            return json.loads(text)
        except json.JSONDecodeError:  # some releases name JSON-lines files .json
            return _records(jsonl_lines(text), objects_only=False)
    if suf == ".jsonl":
        return _records(jsonl_lines(path.read_text(encoding="utf-8-sig")), objects_only=False)
    if suf in (".csv", ".tsv"):
        return _records(csv_lines(path.read_text(encoding="utf-8-sig"), "\t" if suf == ".tsv" else ","))
    if suf == ".parquet":
        return pd.read_parquet(path).to_dict("records")
    raise ValueError(f"unsupported release file {path.name}")


def _records(lines: list[TableLine], objects_only: bool = True) -> list[Any]:
    out: list[Any] = []
    for tl in lines:
        if tl.row is not None:
            out.append(tl.row)
        elif not objects_only and tl.value is not None:  # JSON, not an object: the importer says what it is
            out.append(tl.value)
        else:
            out.append({UNPARSABLE: f"line {tl.line}: {tl.refused}", LINE: tl.line})
    return out


def rows_of(data: Any) -> Iterator[tuple[str, Any]]:
    """(key, record) pairs of a table: list rows get their index (a refused line: ``line N``), a
    dict of records (a JSON object keyed by id) gets its keys, any other object is one record."""
    if isinstance(data, list):
        for k, r in enumerate(data):
            yield (f"line {r[LINE]}" if isinstance(r, dict) and LINE in r else str(k)), r
    elif isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
        yield from ((str(k), v) for k, v in data.items())
    else:
        yield "0", data


def text(v: Any) -> str:
    """A cell as stripped text ('' for None / NaN)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v).strip()


def verbatim(v: Any) -> str:
    """A text cell exactly as released ('' for None / NaN or a blank cell): the questions, answers
    and statements an importer publishes stay byte-identical (leading spaces included); ids,
    categories and numbers are read with ``text``."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    s = str(v)
    return s if s.strip() else ""


def media_path(info: ReleaseInfo, src: Path) -> str:
    """Where an imported media file lives, relative to the data dir."""
    return f"media/releases/{info.paper}/{safe_name(info.name)}/{safe_name(src.name)}"


def place_media(media: dict[str, Path | bytes], data_dir: Path) -> int:
    """Hard-link (else copy) each released media file into the data dir, or write the bytes a
    table embeds (Parquet image columns); returns how many were placed now (already present
    files with the same size are left alone)."""
    placed = 0
    for rel, src in media.items():
        dst = data_dir / rel
        size = len(src) if isinstance(src, bytes) else src.stat().st_size
        if dst.exists() and dst.stat().st_size == size:
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(f".{dst.name}.tmp")
        if tmp.exists():
            tmp.unlink()
        if isinstance(src, bytes):
            tmp.write_bytes(src)
        else:
            try:
                os.link(src, tmp)
            except OSError:
                shutil.copy2(src, tmp)
        os.replace(tmp, dst)
        placed += 1
    return placed


def embedded_image(value: Any) -> tuple[bytes, str] | None:
    """(bytes, suffix) of an image stored inside a table cell (a Parquet / ``datasets`` Image
    column reads as ``{"bytes": ..., "path": ...}``), or None."""
    if isinstance(value, dict) and isinstance(value.get("bytes"), (bytes, bytearray)) and value["bytes"]:
        data, name = bytes(value["bytes"]), str(value.get("path") or "")
    elif isinstance(value, (bytes, bytearray)) and value:
        data, name = bytes(value), ""
    else:
        return None
    suffix = Path(name).suffix.lower()
    if suffix not in IMAGE_SUFFIXES:
        from io import BytesIO

        from PIL import Image

        try:
            with Image.open(BytesIO(data)) as im:
                suffix = "." + (im.format or "png").lower().replace("jpeg", "jpg")
        except Exception:  # noqa: BLE001 - not an image: the caller rejects the record
            return None
    return data, suffix


def plain(v: Any) -> Any:
    """A Parquet cell as plain Python (numpy arrays -> lists, recursively)."""
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        v = v.tolist()
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def provenance(info: ReleaseInfo, release_split: str | None = None) -> dict[str, Any]:
    """The columns that say an item was imported, from which release, under which licence."""
    return {
        "origin": "imported",
        "release": info.name,
        "release_version": info.version,
        "licence": info.licence,
        "release_split": release_split or None,
        "backend": "human",
        "model": None,
        "prompt_hash": None,
        "source": f"release:{info.name}",
        "channel": None,
        "batch": f"release:{info.name}",
    }


def batch_part(name: str) -> str:
    """The ``<paper>_items`` partition file of a release (beside the recipe's batch files)."""
    return f"release__{safe_name(name)}"


def item_columns(table: str, contracts_dir: Path) -> list[str]:
    """The columns an importer writes: the items contract's (in the paper's ``contracts_dir``), less
    ``lineage`` (the LLM backends behind a recipe-made row; an imported row has none)."""
    from forge.storage.contracts import load_contract

    return [c for c in load_contract(table, contracts_dir).column_names if c != "lineage"]
