"""What every stage after the recipes hands its asset (splits, gates, export, review, the human
steps, every kind of people's work): one ``StageResult``. Dagster-free plain values; the asset
factories (``assets/splits/factory.py``, ``assets/people/factory.py``) turn them into Dagster's
types and ``assets.common.publish`` validates and writes the tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from forge.storage.rejects import RejectLog


class Markdown(str):
    """A metadata value shown as markdown."""


class FilePath(str):
    """A metadata value shown as a path."""


@dataclass
class Check:
    """An asset check's outcome, beside the tables' contract checks."""

    name: str
    passed: bool
    severity: str = "warn"  # warn | error
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class StageResult:
    """Tables (table → part → frame), rejects, metadata, checks; and the LLM side of the run:
    the engine a stage called (its calls go to ``llm_calls``), (stage, part) pairs whose old calls
    an empty file replaces, and whether the engines made any call worth a log."""

    tables: dict[str, dict[str, pd.DataFrame]] = field(default_factory=dict)
    rejects: list[RejectLog] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    engine: Any = None
    llm_parts: list[tuple[str, str]] = field(default_factory=list)
    record_llm: bool = True

    def frame(self, table: str) -> pd.DataFrame:
        """The one part of ``table`` a single-benchmark stage wrote."""
        (df,) = self.tables[table].values()
        return df

    def only(self, *tables: str) -> StageResult:
        """The same result with only ``tables`` (in that order)."""
        return StageResult(
            {t: self.tables[t] for t in tables},
            self.rejects,
            self.metadata,
            self.checks,
            self.engine,
            self.llm_parts,
            self.record_llm,
        )
