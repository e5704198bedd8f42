"""A user's table read line by line: every data line of a JSONL or CSV file becomes its row, or a
refusal that names the line (issue #55: one bad line never costs the others). Used by table
sources (forge/media/sources.py) and release files (forge/releases/records.py)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import Any


@dataclass
class TableLine:
    """One data line of a table: its row, or why the line is refused (``row`` None)."""

    line: int  # 1-based line number in the file (where the row starts)
    row: dict[str, Any] | None
    refused: str = ""
    value: Any = None  # a JSON line that parsed to something else than an object: what it is


def jsonl_lines(text: str) -> list[TableLine]:
    out = []
    # split on newlines only: str.splitlines also breaks at U+2028 and others, which JSON strings may hold
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            out.append(TableLine(n, None, f"not JSON ({getattr(exc, 'msg', exc)})"))
            continue
        if isinstance(row, dict):
            out.append(TableLine(n, row))
        else:
            out.append(TableLine(n, None, f"a JSON {type(row).__name__}, not an object", row))
    return out


def csv_lines(text: str, delimiter: str = ",") -> list[TableLine]:
    """Rows keyed by the header; a line with a different number of fields than the header (an
    unquoted comma would shift the caption) or that the csv module cannot read is refused."""
    reader = csv.reader(
        io.StringIO(text, newline=""), delimiter=delimiter, strict=True
    )  # bad quoting is refused, not guessed
    header: list[str] | None = None
    out = []
    while True:
        start = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            return out
        except csv.Error as exc:  # the reader resumes at the next line
            if header is None:
                raise
            span = f"(to line {reader.line_num}) " if reader.line_num > start else ""  # an unclosed quote
            out.append(TableLine(start, None, f"{span}not readable as CSV ({exc})"))
            continue
        if not fields:  # a blank line
            continue
        if header is None:
            header = fields
        elif len(fields) != len(header):
            out.append(TableLine(start, None, f"{len(fields)} fields where the header has {len(header)}"))
        else:
            out.append(TableLine(start, dict(zip(header, fields, strict=True))))
