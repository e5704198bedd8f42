"""Glue every asset shares: partitions, contract checks, and publishing tables.

An asset computes plain DataFrames with functions from ``forge``; ``publish`` then
validates each frame against its data contract, writes it atomically as one Parquet file
per partition, writes the stage's rejects, refreshes the DuckDB catalog and returns a
``MaterializeResult`` with row counts, column schema, a preview and one blocking
``AssetCheckResult`` per table (``contract_<table>``). Given the context, it puts each
partition's own numbers on that partition's materialization (see ``publish``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg
import numpy as np
import pandas as pd

from forge.provenance.lineage import stage_calls, with_lineage
from forge.provenance.versioning import content_hash, rows_version
from forge.storage import UNPARTITIONED, RejectLog, TableStore, refresh_catalog
from forge.storage.contracts import Contract, load_contract
from forge.storage.rejects import REJECTS_TABLE
from forge.storage.result import Check, FilePath, Markdown, StageResult
from forge.storage.yaml_files import read_yaml

# Items enter in batches (a source cut into chunks); every per-item stage is partitioned by
# batch, so a user re-runs one batch, backfills many, and the partition count stays sane
# at 100k+ videos (see README, "Partitions").
batches = dg.DynamicPartitionsDefinition(name="batches")
SINGLE_RUN = dg.BackfillPolicy.single_run()
T = TypeVar("T")


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
                    other=[
                        x
                        for x in (
                            f">= {c.min}" if c.min is not None else None,
                            f"<= {c.max}" if c.max is not None else None,
                            (f"in {list(c.values)}" if not isinstance(c.values, str) else f"in {c.values}")
                            if c.values is not None
                            else None,
                        )
                        if x
                    ],
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


QUALITY_PATH = Path(__file__).resolve().parents[1] / "config" / "quality.yaml"


def reject_rate_ceiling(stage: str, declared: float | None = None, path: Path = QUALITY_PATH) -> tuple[float, int]:
    """(ceiling, min_seen) of ``stage``'s reject-rate check: config/quality.yaml's ``stages.<stage>``
    (a user's override), else the ceiling the stage declares (``declared``: a filter meant to drop
    most inputs, in its paper's package), else the file's default."""
    cfg = (read_yaml(path) or {}).get("reject_rate", {}) if path.exists() else {}
    default = cfg.get("ceiling", 0.95) if declared is None else declared
    return float((cfg.get("stages") or {}).get(stage, default)), int(cfg.get("min_seen", 3))


def stage_check_specs(
    asset: str, tables: Iterable[str], reject_ceiling: float | None = None
) -> list[dg.AssetCheckSpec]:
    """Contract checks plus the stage's ``reject_rate`` check (emitted by ``StageRun.publish``; its
    ceiling and minimum in the check's metadata, where the run reads them)."""
    ceiling, min_seen = reject_rate_ceiling(asset, reject_ceiling)
    return [
        *contract_check_specs(asset, tables),
        dg.AssetCheckSpec(
            name="reject_rate",
            asset=asset,
            description=f"rejected / (rejected + kept) for this stage ≤ {ceiling:g} (config/quality.yaml): "
            "a stage that rejects (nearly) everything is a failure, not an empty success.",
            metadata={"ceiling": ceiling, "min_seen": min_seen},
        ),
    ]


def table_metadata(tables: Iterable[str]) -> dict[str, Any]:
    """Definition-time metadata: the column schema of the asset's main table."""
    tables = list(tables)
    md: dict[str, Any] = {"tables": ", ".join(tables)}
    if tables:
        md["dagster/column_schema"] = column_schema(load_contract(tables[0]))
    return md


def preview_cell(v: Any, digits: int = 4, max_chars: int = 60) -> str | int | float | bool | None:
    """A value a typed metadata table can hold: floats rounded (a preview is read, not computed
    on), numbers and booleans kept, lists / JSON / timestamps as text clipped to ``max_chars``."""
    if v is None or (pd.api.types.is_scalar(v) and pd.isna(v)):
        return None
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | np.integer):
        return int(v)
    if isinstance(v, float | np.floating):
        return round(float(v), digits)
    if isinstance(v, np.ndarray):
        v = v.tolist()
    s = str(v).replace("\n", " ")
    return s if len(s) <= max_chars else s[: max_chars - 1] + "…"


def contact_sheet(tiles: Iterable[Any], alt: str, **kw: Any) -> dg.MetadataValue:
    """Thumbnails with captions, inline in the UI (forge/media/contact_sheet.py)."""
    from forge.media.contact_sheet import markdown

    return dg.MetadataValue.md(markdown(list(tiles), alt=alt, **kw))


def item_sheet(items: pd.DataFrame, data_dir: Path, alt: str) -> dg.MetadataValue:
    """Benchmark items as pictures: image or frame strip, question, options (answer starred)."""
    from forge.media.sheets import item_tiles

    return contact_sheet(item_tiles(items, data_dir), alt, caption_lines=8, thumb=200, columns=3)


def table_preview(df: pd.DataFrame, contract: Contract, rows: int = 8) -> dg.TableMetadataValue:
    """The first rows as typed table metadata with the contract's column schema (the UI renders
    it as a scrollable table, so a wide table is not clipped)."""
    cols = [c for c in contract.column_names if c in df.columns]
    records = [
        dg.TableRecord({c: preview_cell(v) for c, v in zip(cols, row)})
        for row in df[cols].head(rows).itertuples(index=False)
    ]
    schema = dg.TableSchema(columns=[c for c in column_schema(contract).columns if c.name in cols])
    return dg.MetadataValue.table(records=records, schema=schema)


class ContractViolation(dg.Failure):
    """Rows that break their table's data contract: refused, nothing written."""

    def __init__(self, violations: list[str]):
        self.violations = violations
        super().__init__(
            description=f"{len(violations)} contract violation(s); nothing was written: " + "; ".join(violations[:5]),
            metadata={"violations": dg.MetadataValue.md("\n".join(f"- {v}" for v in violations[:50]))},
        )


def _partitioned(context: dg.AssetExecutionContext | None) -> bool:
    return context is not None and (context.has_partition_key or context.has_partition_key_range)


def partition_metadata(
    tables: Mapping[str, Mapping[str, pd.DataFrame]], rejects: Iterable[RejectLog], part: str
) -> dict[str, Any]:
    """What one partition holds: rows per table, a preview, its rejects by reason."""
    md: dict[str, Any] = {}
    for i, (table, parts) in enumerate(tables.items()):
        df = parts.get(part)
        rows = 0 if df is None else len(df)
        md["dagster/row_count" if i == 0 else f"{table}/rows"] = rows
        md["preview" if i == 0 else f"{table}/preview"] = table_preview(
            df if df is not None else pd.DataFrame(), load_contract(table)
        )
    logs = [r for r in rejects if r.partition == part]
    md["rejects"] = sum(len(r) for r in logs)
    md["rejects_by_reason"] = dg.MetadataValue.json(_reasons(logs))
    return md


def _reasons(logs: Iterable[RejectLog]) -> dict[str, int]:
    frames = [r.frame() for r in logs if len(r)]
    return pd.concat(frames, ignore_index=True)["reason"].value_counts().to_dict() if frames else {}


def _is_count(v: Any) -> bool:
    """A number or a distribution: true of the run, not of each partition it covered."""
    if isinstance(v, dg.MetadataValue):
        return isinstance(v, (dg.IntMetadataValue, dg.FloatMetadataValue, dg.JsonMetadataValue))
    return isinstance(v, (int, float, dict, list)) and not isinstance(v, bool)


def publish(
    store: TableStore,
    tables: Mapping[str, Mapping[str, pd.DataFrame]],
    rejects: Iterable[RejectLog] = (),
    metadata: Mapping[str, Any] | None = None,
    asset_key: dg.AssetKey | None = None,
    started: float | None = None,
    context: dg.AssetExecutionContext | None = None,
    part_metadata: Mapping[str, Mapping[str, Any]] | None = None,
    version_inputs: str = "",
) -> dg.MaterializeResult:
    """Validate, write and describe what one asset produced.

    ``tables`` maps table name → partition → frame. Frames are conformed to their
    contract and validated *before* anything is written: rows that break their contract
    are refused (``ContractViolation``, the step fails with every violation listed) and
    the previous files stay in place, so no descendant ever reads them.

    With ``context`` on a partitioned asset, each partition's materialization gets its own
    ``dagster/row_count``, preview, rejects and ``part_metadata[part]`` (Dagster copies a
    run's result metadata onto every partition it covers, so a backfill run would otherwise
    give each batch the whole run's numbers). The result keeps the run's totals as
    ``run_total_rows``/``run_rejects``/``run_partitions``; in a run over several partitions
    the caller's numbers that are not given per partition are renamed ``run_<key>``.
    """
    rejects = list(rejects)
    per_part = {k: dict(v) for k, v in (part_metadata or {}).items()}
    checks: list[dg.AssetCheckResult] = []
    conformed: dict[str, dict[str, pd.DataFrame]] = {}
    violations: list[str] = []
    for table, parts in tables.items():
        contract = load_contract(table)
        conformed[table] = {}
        for part, df in parts.items():
            try:
                df = contract.conform(df)
            except ValueError as exc:
                violations.append(f"{table} [{part}] {exc}")
                continue
            violations += [f"{table} [{part}] {p}" for p in contract.validate(df)]
            conformed[table][part] = df
    if violations:
        raise ContractViolation(violations)
    keys = partition_keys(context) if _partitioned(context) else []
    multi = len(keys) > 1
    per_part_keys = {k for v in per_part.values() for k in v}
    md: dict[str, Any] = {
        (f"run_{k}" if multi and k not in per_part_keys and _is_count(v) else k): v for k, v in (metadata or {}).items()
    }
    md["run_partitions"] = len(keys) if keys else 1
    first = True
    for table, parts in conformed.items():
        contract = load_contract(table)
        total, problems, frames = 0, [], []
        for part, df in parts.items():
            store.write(table, df, part, schema=contract.arrow_schema())
            total += len(df)
            frames.append(df)
        checks.append(
            dg.AssetCheckResult(
                check_name=f"contract_{table}",
                asset_key=asset_key,
                passed=not problems,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata={
                    "rows": total,
                    "violations": len(problems),
                    "details": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems[:50]) or "none"),
                },
            )
        )
        if first:
            md["dagster/column_schema"] = column_schema(contract)
            md["run_total_rows"] = total
        else:
            md[f"run_total_rows/{table}"] = total
        if not multi:  # one partition (or none): the run's numbers are that partition's
            md["dagster/row_count" if first else f"{table}/rows"] = total
            sample = next((f for f in frames if not f.empty), frames[0] if frames else pd.DataFrame())
            md["preview" if first else f"{table}/preview"] = table_preview(sample, contract)
        first = False
    reject_total = 0
    for log in rejects:
        reject_total += len(log)
        store.write(
            REJECTS_TABLE,
            load_contract(REJECTS_TABLE).conform(log.frame()),
            log.part_name(),
            schema=load_contract(REJECTS_TABLE).arrow_schema(),
        )
    md["run_rejects"] = reject_total
    if multi:  # the stage across the run's batches, on every batch: an empty one does not hide the rest
        md["run_rows_by_batch"] = _rows_by_batch(conformed, rejects, keys)
    if not multi:
        md["rejects"] = reject_total
        if reject_total:
            md["rejects_by_reason"] = dg.MetadataValue.json(_reasons(rejects))
    elif reject_total:
        md["run_rejects_by_reason"] = dg.MetadataValue.json(_reasons(rejects))
    if started is not None:
        md["seconds"] = round(time.perf_counter() - started, 3)
    for part in keys:
        assert context is not None
        context.add_asset_metadata(
            {**partition_metadata(conformed, rejects, part), **per_part.get(part, {})},
            asset_key=asset_key,
            partition_key=part,
        )
    refresh_catalog(store)
    # From the rows, not the run: a re-run that wrote the same rows leaves descendants Synced.
    # ``version_inputs``: what the rows do not show but descendants read (e.g. local files' stat)
    version = dg.DataVersion(
        rows_version(conformed) + (f"-{content_hash(version_inputs, length=8)}" if version_inputs else "")
    )
    return dg.MaterializeResult(asset_key=asset_key, metadata=md, check_results=checks, data_version=version)


def _rows_by_batch(
    conformed: Mapping[str, Mapping[str, pd.DataFrame]], rejects: list[RejectLog], keys: list[str]
) -> dg.MetadataValue:
    """A markdown table: rows of the main table and rejects per batch of the run."""
    main = next(iter(conformed.values()), {})
    rejected: dict[str, int] = {}
    for log in rejects:
        rejected[log.partition] = rejected.get(log.partition, 0) + len(log)
    lines = ["| batch | rows | rejects |", "|---|---|---|"]
    lines += [f"| {k} | {len(main.get(k, ()))} | {rejected.get(k, 0)} |" for k in keys]
    return dg.MetadataValue.md("\n".join(lines))


class StageRun:
    """The boilerplate of one per-batch stage, so an asset body is only the stage's own logic.

    ::

        run = StageRun(context, storage, llm)                 # timer, engine, one table per asset
        for part, rejects in run.partitions():                # a RejectLog per partition
            rows = ...                                        # the stage's logic
            run.put(part, rows)                               # conformed to the contract at once
            run.add_attempts(refine_run.attempts_frame())
        run.show_items()                                      # benchmark items: a contact sheet per part
        return run.publish(run.describe(lambda df: {"my_metric": ...}))  # per partition and run-wide

    ``put`` conforms at once, so an empty batch (nothing in, everything rejected, every call
    failed) is a frame with the contract's columns and code after it never meets a missing
    column. ``publish`` rewrites ``llm_calls``/``llm_attempts`` for every partition the run
    covered, so a re-run that makes no call leaves no stale rows. An LLM stage uses
    ``run.map_partitions(body)`` instead of the loop (the loop body becomes ``body(part,
    rejects)``, returning its counters), so its partitions share the engine's budget at once.

    An unpartitioned (fan-in) stage takes its one partition with ``part, rejects = run.only()``.
    ``rejects=False`` marks a stage that rejects nothing, so it writes no empty rejects
    partition (a reject it does record is still written).
    """

    def __init__(
        self,
        context: dg.AssetExecutionContext,
        storage: Any,
        llm: Any = None,
        tables: Iterable[str] | None = None,
        stage: str | None = None,
        rejects: bool = True,
    ):
        self.t0 = time.perf_counter()
        self.context, self.store = context, storage.store
        self.stage = stage or context.asset_key.path[-1]
        self.engine = llm.engine() if llm is not None else None
        self.empty_rejects = rejects
        self.tables: dict[str, dict[str, pd.DataFrame]] = {t: {} for t in (tables or [self.stage])}
        self.logs: list[RejectLog] = []
        self.attempts: list[pd.DataFrame] = []
        self.parts: list[str] = []
        self.part_md: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()  # map_partitions bodies write their partitions from threads

    def partitions(self) -> Iterator[tuple[str, RejectLog]]:
        for part in partition_keys(self.context):
            log = RejectLog(self.stage, part)
            self.logs.append(log)
            self.parts.append(part)
            yield part, log

    def only(self) -> tuple[str, RejectLog]:
        """The one partition of an unpartitioned (fan-in) stage and its RejectLog."""
        [(part, log)] = self.partitions()
        return part, log

    def map_partitions(self, body: Callable[[str, RejectLog], T]) -> list[T]:
        """``body(part, rejects)`` for every partition at once, results in partition order.

        With an engine the bodies run in threads on its one concurrency budget
        (``LLMEngine.map_partitions``), so a slow request in one batch never holds up the
        others. A body writes only its own partition (``put``/``note``/``add_attempts``/its
        ``RejectLog`` are per partition) and returns what the run sums up afterwards."""
        pairs = dict(self.partitions())
        if self.engine is None:
            return [body(p, log) for p, log in pairs.items()]
        return self.engine.map_partitions(list(pairs), lambda p: body(p, pairs[p]))

    def put(
        self,
        part: str,
        rows: pd.DataFrame | Iterable[Mapping[str, Any]],
        table: str | None = None,
        columns: list[str] | None = None,
    ) -> pd.DataFrame:
        table = table or next(iter(self.tables))
        df = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows), columns=columns)
        contract = load_contract(table)
        if "lineage" in contract.column_names and len(df):
            df = with_lineage(df, *self.batch_lineage(part))
        df = contract.conform(df)
        with self._lock:
            self.tables.setdefault(table, {})[part] = df
        return df

    def batch_lineage(self, part: str) -> tuple[set[str], set[str]]:
        """Backends and models of every LLM call of this paper's recipe stages in ``part``: the
        stored ``llm_calls`` of the other stages plus this run's own calls (forge/provenance/lineage.py)."""
        paper = self.stage.split("_")[0]
        stored = self.store.read("llm_calls", where="partition = ?", params=[part])
        if len(stored):
            stored = stored[stored["stage"] != self.stage]
        mine = self.engine.calls_frame() if self.engine is not None else pd.DataFrame()
        frames = [f for f in (stored, mine) if len(f)]
        return stage_calls(pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(), paper, part)

    def frame(self, table: str | None = None) -> pd.DataFrame:
        """Every partition of ``table`` written so far, concatenated (contract columns when empty)."""
        table = table or next(iter(self.tables))
        frames = [f for f in self.tables.get(table, {}).values() if len(f)]
        return pd.concat(frames, ignore_index=True) if frames else load_contract(table).conform(pd.DataFrame())

    def note(self, part: str, **values: Any) -> None:
        """Metadata true of one partition (a counter, a picture): shown on that partition's
        materialization only."""
        with self._lock:
            self.part_md.setdefault(part, {}).update(values)

    def describe(self, fn: Callable[[pd.DataFrame], Mapping[str, Any]], table: str | None = None) -> dict[str, Any]:
        """``fn`` of each partition's frame on that partition; returns ``fn`` of the whole run."""
        table = table or next(iter(self.tables))
        empty = load_contract(table).conform(pd.DataFrame())
        for part in self.parts:
            self.note(part, **fn(self.tables.get(table, {}).get(part, empty)))
        return dict(fn(self.frame(table)))

    def show_items(self, table: str | None = None) -> None:
        """Each partition's benchmark items as a contact sheet (image or frames, question, options)."""
        table = table or next(iter(self.tables))
        for part in self.parts:
            df = self.tables.get(table, {}).get(part)
            if df is not None:
                self.note(part, contact_sheet=item_sheet(df, self.store.data_dir, f"{table} {part}"))

    def add_attempts(self, attempts: pd.DataFrame | Iterable[Mapping[str, Any]]) -> None:
        frame = attempts if isinstance(attempts, pd.DataFrame) else pd.DataFrame(list(attempts))
        with self._lock:
            self.attempts.append(frame)

    def rejected(self) -> int:
        return sum(len(log) for log in self.logs)

    def publish(
        self,
        metadata: Mapping[str, Any] | None = None,
        call_stages: Iterable[str] = (),
        attempts_key: str | None = None,
        record_attempts: bool | None = None,
        version_inputs: str = "",
    ) -> dg.MaterializeResult:
        """Write attempts (when the stage made any, or ``record_attempts``), the LLM call log
        (for this stage and ``call_stages``), then the tables and rejects. ``version_inputs``:
        what the rows do not show but descendants read (see ``publish``)."""
        from assets.llm_support import llm_partition_metadata, record_llm_attempts, record_llm_calls

        md: dict[str, Any] = {}
        if record_attempts or (record_attempts is None and self.attempts):
            n = record_llm_attempts(self.store, self.attempts, [(self.stage, p) for p in self.parts])
            if attempts_key:
                md[attempts_key] = n
        if self.engine is not None:
            stages = [self.stage, *call_stages]
            md |= record_llm_calls(self.store, self.engine, [(s, p) for s in stages for p in self.parts])
            calls = self.engine.calls_frame()
            for part in self.parts:
                self.note(part, **llm_partition_metadata(calls, part, stages))
        md |= dict(metadata or {})
        result = publish(
            self.store,
            self.tables,
            rejects=[log for log in self.logs if self.empty_rejects or len(log)],
            metadata=md,
            asset_key=self.context.asset_key,
            started=self.t0,
            context=self.context,
            part_metadata=self.part_md,
            version_inputs=version_inputs,
        )
        if not any(s.name == "reject_rate" for s in self.context.assets_def.check_specs):
            return result
        return dg.MaterializeResult(
            asset_key=self.context.asset_key,
            metadata=result.metadata,
            check_results=[*(result.check_results or []), self.reject_rate_check()],
            data_version=result.data_version,
        )

    def reject_rate_check(self) -> dg.AssetCheckResult:
        (spec,) = [s for s in self.context.assets_def.check_specs if s.name == "reject_rate"]
        ceiling, min_seen = (getattr(v, "value", v) for v in (spec.metadata["ceiling"], spec.metadata["min_seen"]))
        kept = len(self.frame())
        rejected = self.rejected()
        seen = kept + rejected
        rate = rejected / seen if seen else 0.0
        return dg.AssetCheckResult(
            check_name="reject_rate",
            asset_key=self.context.asset_key,
            severity=dg.AssetCheckSeverity.ERROR,
            passed=seen < min_seen or rate <= ceiling,
            metadata={
                "rejected": rejected,
                "kept": kept,
                "reject_rate": round(rate, 4),
                "ceiling": ceiling,
                "note": f"fewer than {min_seen} items: not judged" if seen < min_seen else "",
            },
        )


def sum_counts(parts: Iterable[Mapping[str, int]], start: Mapping[str, int] | None = None) -> dict[str, int]:
    """Per-partition counters (what ``StageRun.map_partitions`` bodies return) added up."""
    out = dict(start or {})
    for part in parts:
        for k, v in part.items():
            out[k] = out.get(k, 0) + v
    return out


def reuse_metadata(cache: Any) -> dict[str, Any]:
    """``reused`` / ``computed`` units per cache stage (forge/storage/stage_cache.py), for the UI."""
    if cache is None:
        return {"reuse": "off"}
    summary = cache.summary()
    return {
        "reused": sum(v["reused"] for v in summary.values()),
        "computed": sum(v["computed"] for v in summary.values()),
        "reuse_by_stage": dg.MetadataValue.json(summary),
    }


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


SEVERITY = {"warn": dg.AssetCheckSeverity.WARN, "error": dg.AssetCheckSeverity.ERROR}


def as_metadata(md: Mapping[str, Any]) -> dict[str, Any]:
    """A stage result's plain metadata values (``forge/storage/result.py``) → Dagster's."""
    out: dict[str, Any] = {}
    for k, v in md.items():
        if isinstance(v, Markdown):
            out[k] = dg.MetadataValue.md(str(v))
        elif isinstance(v, FilePath):
            out[k] = dg.MetadataValue.path(str(v))
        elif isinstance(v, (dict, list, tuple)):
            out[k] = dg.MetadataValue.json(json.loads(json.dumps(v, default=str)))
        elif v is None:
            out[k] = ""
        else:
            out[k] = v
    return out


def check_result(c: Check, asset_key: dg.AssetKey | None = None) -> dg.AssetCheckResult:
    """A stage result's check → Dagster's."""
    return dg.AssetCheckResult(
        check_name=c.name,
        passed=bool(c.passed),
        severity=SEVERITY[c.severity],
        metadata=as_metadata(c.metadata),
        asset_key=asset_key,
    )


def publish_result(
    store: TableStore,
    out: StageResult,
    asset_key: dg.AssetKey,
    started: float | None = None,
    keep_version: bool = True,
) -> dg.MaterializeResult:
    """Publish a stage's result (``publish``: its tables and rejects, its metadata) with its own
    checks beside the contract checks. ``keep_version`` False leaves the content data version out
    (people's work publishes without it)."""
    res = publish(
        store, out.tables, rejects=out.rejects, metadata=as_metadata(out.metadata), asset_key=asset_key, started=started
    )
    return dg.MaterializeResult(
        asset_key=asset_key,
        metadata=res.metadata,
        check_results=[*res.check_results, *(check_result(c, asset_key) for c in out.checks)],
        data_version=res.data_version if keep_version else None,
    )
