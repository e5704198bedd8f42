"""The implication filter (II-Bench §3.2, Stage 3): keep only images with a metaphorical or
suggestive implication.

The paper does this by human inspection. Here an LLM judge gives a verdict with its reason,
and a human verdict table (CSV or JSONL) overrides it: a row in that table decides the
image without an LLM call and is recorded with ``origin = "human"``.

Human verdict table columns: ``id`` (a frame id or an image/item id; ``frame_id``,
``image_id`` and ``item_id`` are accepted as the column name too), ``verdict``
(``keep``/``drop``; also ``yes``/``no``, ``true``/``false``, ``1``/``0``), optional ``note``.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KEEP_WORDS = {"keep", "yes", "y", "true", "1", "implication", "kept"}
DROP_WORDS = {"drop", "no", "n", "false", "0", "discard", "reject", "dropped"}
ID_COLUMNS = ("id", "frame_id", "image_id", "item_id")


class VerdictTableError(ValueError):
    """The human verdict table is malformed (a user error: fail loudly, with the line)."""


@dataclass(frozen=True)
class HumanVerdict:
    id: str
    keep: bool
    note: str = ""


def parse_verdict_word(raw: Any) -> bool | None:
    if isinstance(raw, bool):
        return raw
    t = str(raw).strip().lower()
    if t in KEEP_WORDS:
        return True
    if t in DROP_WORDS:
        return False
    return None


def _rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        out = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise VerdictTableError(f"{path}:{n}: not JSON: {exc}") from exc
            if not isinstance(row, dict):
                raise VerdictTableError(f"{path}:{n}: each line must be a JSON object")
            out.append(row)
        return out
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def load_human_verdicts(path: str | Path | None) -> dict[str, HumanVerdict]:
    """Verdicts by id; ``{}`` when no path is configured. A later row for an id wins."""
    if not path:
        return {}
    path = Path(path)
    if not path.exists():
        raise VerdictTableError(f"human verdict table {path} does not exist")
    out: dict[str, HumanVerdict] = {}
    for n, row in enumerate(_rows(path), 1):
        key = next((c for c in ID_COLUMNS if row.get(c) not in (None, "")), None)
        if key is None:
            raise VerdictTableError(f"{path}: row {n} has no id (one of {list(ID_COLUMNS)})")
        keep = parse_verdict_word(row.get("verdict", row.get("keep")))
        if keep is None:
            raise VerdictTableError(f"{path}: row {n}: verdict {row.get('verdict')!r} is not keep/drop")
        ident = str(row[key]).strip()
        out[ident] = HumanVerdict(id=ident, keep=keep, note=str(row.get("note") or "").strip())
    return out


def human_verdict_for(verdicts: dict[str, HumanVerdict], frame_id: str, item_id: str) -> HumanVerdict | None:
    """The frame's own verdict first, then one given for its image (item) id."""
    return verdicts.get(frame_id) or verdicts.get(item_id)


def parse_judge(data: dict[str, Any]) -> tuple[bool, str, str]:
    """(keep, implication, reason) from the judge's reply (schema-valid already)."""
    keep = bool(data.get("has_implication"))
    return keep, str(data.get("implication") or "").strip(), str(data.get("reason") or "").strip()
