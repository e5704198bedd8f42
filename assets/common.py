"""Glue every asset shares: partitions, contract checks, and publishing tables.

An asset computes plain DataFrames with functions from ``forge``; ``publish`` then
validates each frame against its data contract, writes it atomically as one Parquet file
per partition, writes the stage's rejects, refreshes the DuckDB catalog and returns a
``MaterializeResult`` with row counts, column schema, a preview and one blocking
``AssetCheckResult`` per table (``contract_<table>``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

import dagster as dg
import pandas as pd

from forge.contracts import Contract, load_contract
from forge.storage import UNPARTITIONED, RejectLog, TableStore, refresh_catalog
from forge.storage.rejects import REJECTS_TABLE

# Items enter in batches (a source cut into chunks); every per-item stage is partitioned by
# batch, so a user re-runs one batch, backfills many, and the partition count stays sane
# at 100k+ videos (see README, "Partitions").
batches = dg.DynamicPartitionsDefinition(name="batches")
SINGLE_RUN = dg.BackfillPolicy.single_run()


def partition_keys(context: dg.AssetExecutionContext) -> list[str]:
    """The partitions this run covers (several under a single-run backfill)."""
    if not context.has_partition_key and not context.has_partition_key_range:
        return [UNPARTITIONED]
    return list(context.partition_keys)


def column_schema(contract: Contract) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name=c.name,
                type=c.type,
                description=c.description or None,
                constraints=dg.TableColumnConstraints(
                    nullable=c.nullable,
                    unique=(contract.unique == (c.name,)),
                    other=[x for x in (
                        f">= {c.min}" if c.min is not None else None,
                        f"<= {c.max}" if c.max is not None else None,
                        f"in {list(c.values)}" if c.values is not None else None,
                    ) if x],
                ),
            )
            for c in contract.columns
        ]
    )


def contract_check_specs(asset: str | dg.AssetKey, tables: Iterable[str]) -> list[dg.AssetCheckSpec]:
    """One blocking check per table the asset writes: a violation stops descendants."""
    key = dg.AssetKey(asset) if isinstance(asset, str) else asset
    return [
        dg.AssetCheckSpec(
            name=f"contract_{t}",
            asset=key,
            blocking=True,
            description=f"Rows of `{t}` conform to data_contracts/{t}.yaml (types, nulls, ranges, unique key).",
        )
        for t in tables
    ]


def table_metadata(tables: Iterable[str]) -> dict[str, Any]:
    """Definition-time metadata: the column schema of the asset's main table."""
    tables = list(tables)
    md: dict[str, Any] = {"tables": ", ".join(tables)}
    if tables:
        md["dagster/column_schema"] = column_schema(load_contract(tables[0]))
    return md


def markdown_preview(df: pd.DataFrame, rows: int = 8, max_chars: int = 60) -> str:
    if df.empty:
        return "_no rows_"
    head = df.head(rows).copy()
    cols = list(head.columns)

    def cell(v: Any) -> str:
        s = str(v).replace("|", "\\|").replace("\n", " ")
        return s if len(s) <= max_chars else s[: max_chars - 1] + "…"

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in head.itertuples(index=False)]
    return "\n".join(lines)


def publish(
    store: TableStore,
    tables: Mapping[str, Mapping[str, pd.DataFrame]],
    rejects: Iterable[RejectLog] = (),
    metadata: Mapping[str, Any] | None = None,
    asset_key: dg.AssetKey | None = None,
    started: float | None = None,
) -> dg.MaterializeResult:
    """Validate, write and describe what one asset produced.

    ``tables`` maps table name → partition → frame. Frames are conformed to their
    contract; rows are written even when they violate it (so the user can inspect them
    in DuckDB) but the blocking check then fails and descendants do not run.
    """
    md: dict[str, Any] = dict(metadata or {})
    checks: list[dg.AssetCheckResult] = []
    first = True
    for table, parts in tables.items():
        contract = load_contract(table)
        total, problems, frames = 0, [], []
        for part, df in parts.items():
            df = contract.conform(df)
            problems += [f"[{part}] {p}" for p in contract.validate(df)]
            store.write(table, df, part, schema=None if problems else contract.arrow_schema())
            total += len(df)
            frames.append(df)
        checks.append(
            dg.AssetCheckResult(
                check_name=f"contract_{table}",
                asset_key=asset_key,
                passed=not problems,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata={"rows": total, "violations": len(problems), "details": dg.MetadataValue.md(
                    "\n".join(f"- {p}" for p in problems[:50]) or "none")},
            )
        )
        prefix = "" if first else f"{table}/"
        if first:
            md["dagster/row_count"] = total
            md["dagster/column_schema"] = column_schema(contract)
        else:
            md[f"{table}/rows"] = total
        sample = next((f for f in frames if not f.empty), frames[0] if frames else pd.DataFrame())
        md[f"{prefix}preview"] = dg.MetadataValue.md(markdown_preview(sample))
        first = False
    reject_total = 0
    for log in rejects:
        reject_total += len(log)
        store.write(REJECTS_TABLE, load_contract(REJECTS_TABLE).conform(log.frame()), log.part_name(),
                    schema=load_contract(REJECTS_TABLE).arrow_schema())
    md["rejects"] = reject_total
    if reject_total:
        allrej = pd.concat([r.frame() for r in rejects if len(r)], ignore_index=True)
        md["rejects_by_reason"] = dg.MetadataValue.json(allrej["reason"].value_counts().to_dict())
    if started is not None:
        md["seconds"] = round(time.perf_counter() - started, 3)
    refresh_catalog(store)
    return dg.MaterializeResult(asset_key=asset_key, metadata=md, check_results=checks)


def reuse_metadata(cache: Any) -> dict[str, Any]:
    """``reused`` / ``computed`` units per cache stage (forge/storage/stage_cache.py), for the UI."""
    if cache is None:
        return {"reuse": "off"}
    summary = cache.summary()
    return {"reused": sum(v["reused"] for v in summary.values()),
            "computed": sum(v["computed"] for v in summary.values()),
            "reuse_by_stage": dg.MetadataValue.json(summary)}


class Progress:
    """Logs items done / total, rate and ETA at most every ``every_s`` seconds."""

    def __init__(self, log: Any, what: str, total: int, every_s: float = 5.0):
        self.log, self.what, self.total, self.every_s = log, what, total, every_s
        self.done, self.t0, self.last = 0, time.perf_counter(), 0.0

    def step(self, n: int = 1) -> None:
        self.done += n
        now = time.perf_counter()
        if now - self.last >= self.every_s or self.done == self.total:
            self.last = now
            rate = self.done / max(now - self.t0, 1e-9)
            eta = (self.total - self.done) / rate if rate > 0 else float("inf")
            self.log.info(f"{self.what}: {self.done}/{self.total} ({rate:.1f}/s, ETA {eta:.0f}s)")
