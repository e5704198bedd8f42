"""Rejected items: every stage records what it dropped, with the stage and the reason.

Rows go to the shared ``rejects`` table, one file per (stage, partition), so re-running
a stage for a partition replaces its rejects instead of piling up duplicates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import pandas as pd

REJECTS_TABLE = "rejects"


@dataclass
class RejectLog:
    stage: str
    partition: str
    rows: list[dict] = field(default_factory=list)

    def add(
        self,
        item_id: str,
        reason: str,
        error_class: str = "",
        detail: str = "",
        related_id: str | None = None,
    ) -> None:
        """Record one rejected item. ``reason`` is a short stable code (e.g. ``duplicate``,
        ``download_failed``), ``detail`` the human-readable message, ``related_id`` an id
        the reject points at (the kept twin of a duplicate, the clip of a frame...)."""
        self.rows.append(
            {
                "stage": self.stage,
                "partition": self.partition,
                "item_id": str(item_id),
                "reason": reason,
                "error_class": error_class,
                "detail": detail[:2000],
                "related_id": related_id,
                "rejected_at": datetime.now(UTC),
            }
        )

    def add_exception(self, item_id: str, reason: str, exc: BaseException, related_id: str | None = None) -> None:
        self.add(item_id, reason, type(exc).__name__, str(exc) or repr(exc), related_id)

    def __len__(self) -> int:
        return len(self.rows)

    def frame(self) -> pd.DataFrame:
        cols = ["stage", "partition", "item_id", "reason", "error_class", "detail", "related_id", "rejected_at"]
        return pd.DataFrame(self.rows, columns=cols)

    def part_name(self) -> str:
        return f"{self.stage}__{self.partition}"
