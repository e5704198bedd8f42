"""How a verdict row names the annotation it was read from, Dagster-free.

``<project id>:<annotation id>@<created>`` (a unit task's rows add ``:<item id>``, one per member),
``<created>`` being the annotation's creation time in UTC without colons. Label Studio numbers
projects and annotations from 1 in every new database, so after a restore or a re-created server a
new annotation can carry an old annotation's ids; it never carries its creation time, so the two
verdicts keep two rows and neither person's work overwrites the other's. Rows recorded before
(``<project>:<annotation>``, no ``@``) are read as they are (``verdicts.merge``).
"""

from __future__ import annotations

from typing import Any

import pandas as pd


def created_stamp(created_at: Any) -> str:
    """The annotation's creation time as a verdict id carries it ("" when Label Studio gave none)."""
    if created_at is None or (not isinstance(created_at, str) and pd.isna(created_at)) or created_at == "":
        return ""
    ts = pd.Timestamp(created_at)
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return ts.strftime("%Y%m%dT%H%M%S.%fZ")


def verdict_key(project_id: Any, annotation: dict[str, Any]) -> str:
    """``<project>:<annotation>@<created>`` of one annotation (no ``@`` when it has no creation time)."""
    stamp = created_stamp(annotation.get("created_at"))
    return f"{int(project_id)}:{annotation['id']}" + (f"@{stamp}" if stamp else "")


def annotation_key(verdict_id: Any) -> str:
    """The annotation a verdict row was read from, as its id names it (``<project>:<annotation>@<created>``;
    a row recorded before creation times: ``<project>:<annotation>``), without a unit's ``:<item>``."""
    return ":".join(str(verdict_id).split(":")[:2])


def annotation_ref(verdict_id: Any) -> str:
    """``<project>:<annotation>``: the ids the tool shows now (one database's names only)."""
    return annotation_key(verdict_id).split("@", 1)[0]


def member_part(verdict_id: Any) -> str:
    """A unit task's ``<item id>`` of the row ("" for an item task's row)."""
    return ":".join(str(verdict_id).split(":")[2:])


def is_legacy(verdict_id: Any) -> bool:
    """A row recorded before verdict ids carried the annotation's creation time."""
    return "@" not in annotation_key(verdict_id)
