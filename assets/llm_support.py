"""What every LLM asset does around the engine: record its calls, show them, check prompts.

In an LLM asset::

    engine = llm.engine()
    for part in partition_keys(context):
        results = engine.run("vimu_qa", part, requests)         # stage = asset name
        ...
    md = record_llm_calls(storage.store, engine)                  # writes llm_calls partitions
    return publish(store, {...}, rejects=[...], metadata={**md, ...}, context=context)

and next to it ``outdated_prompt_check("vimu_qa", "vimu_qa", [PROMPTS / "generate.yaml"])``
in the module's ``defs``: it counts rows whose ``prompt_hash`` is not the prompt file's
current hash.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from forge.llm.engine import LLMEngine
from forge.llm.ledger_bucket import merged_ledger
from forge.llm.prompts import Prompt, load_prompt
from forge.llm.stub import ADVISORY_NOTE
from forge.storage import TableStore
from forge.storage.contracts import load_contract
from resources.storage import StorageResource

LLM_CALLS_TABLE = "llm_calls"
LLM_ATTEMPTS_TABLE = "llm_attempts"
LLM_LEDGER_TABLE = "llm_ledger"


def _write_shared(store: TableStore, table: str, df: pd.DataFrame, stage_partitions: Iterable[tuple[str, str]]) -> int:
    """One file per ``<stage>__<partition>`` (so a re-run replaces exactly its rows)."""
    contract = load_contract(table)
    written = 0
    for stage, part in sorted(set(stage_partitions)):
        sub = df[(df["stage"] == stage) & (df["partition"] == part)] if len(df) else df
        conformed = contract.conform(sub)
        problems = contract.validate(conformed)
        if problems:
            raise ValueError(f"{table} rows for {stage}/{part} violate the contract: {problems[:3]}")
        store.write(table, conformed, f"{stage}__{part}", schema=contract.arrow_schema())
        written += len(conformed)
    return written


def llm_metadata(engine: LLMEngine) -> dict[str, Any]:
    s = engine.stats()
    md: dict[str, Any] = {
        "llm_backend": s["backend"],
        "llm_model": s["model"],
        "llm_calls": s["calls"],
        "llm_cache_hits": s["cache_hits"],
        "llm_failures": s["failures"],
        "llm_retries": s["retries"],
        "llm_timeouts": s["timeouts"],
        "llm_hedges": s["hedges"],
        "llm_time_lost_s": dg.MetadataValue.float(float(s["lost_s"])),
        "llm_repairs": s["repairs"],
        "llm_tokens_in": s["tokens_in"],
        "llm_tokens_out": s["tokens_out"],
        "llm_cost_usd": dg.MetadataValue.float(float(s["cost_usd"])),
    }
    if s["unpriced_models"]:
        md["llm_unpriced_models"] = ", ".join(s["unpriced_models"])
    if s["backend"] == "stub":
        md["llm_warning"] = "made by the offline stub backend: placeholders, not exportable"
        md["stub_verdicts"] = ADVISORY_NOTE
    return md


def llm_partition_metadata(calls: pd.DataFrame, part: str, stages: Iterable[str]) -> dict[str, Any]:
    """One partition's share of the run's LLM calls (``llm_metadata`` holds the run's)."""
    if len(calls):
        calls = calls[(calls["partition"] == part) & calls["stage"].isin(list(stages))]
    hit = calls["cache_hit"].astype(bool) if len(calls) else pd.Series(dtype=bool)
    return {
        "llm_calls": int(((~hit) & (calls["attempt"] > 0)).sum()) if len(calls) else 0,  # as engine.stats()
        "llm_cache_hits": int(hit.sum()),
        "llm_failures": int((calls["outcome"] == "failed").sum()) if len(calls) else 0,
        "llm_tokens_in": int(calls["tokens_in"].sum()) if len(calls) else 0,
        "llm_tokens_out": int(calls["tokens_out"].sum()) if len(calls) else 0,
        "llm_cost_usd": dg.MetadataValue.float(round(float(calls["cost_usd"].sum()), 6) if len(calls) else 0.0),
    }


def record_llm_calls(
    store: TableStore, engine: LLMEngine, partitions: Iterable[tuple[str, str]] = ()
) -> dict[str, Any]:
    """Write the engine's call log to ``llm_calls`` and return the asset metadata.

    ``partitions`` adds (stage, partition) pairs that made no call this run, so their old
    rows are replaced by an empty file instead of lingering.
    """
    df = engine.calls_frame()
    pairs = set(map(tuple, df[["stage", "partition"]].drop_duplicates().itertuples(index=False))) if len(df) else set()
    _write_shared(store, LLM_CALLS_TABLE, df, pairs | set(partitions))
    publish_ledger(store, engine)
    return llm_metadata(engine)


def publish_ledger(store: TableStore, engine: LLMEngine) -> int:
    """Snapshot the append-only spend ledger as the ``llm_ledger`` table (one file, replaced
    atomically), so the catalog has a view the card and cost queries read."""
    return snapshot_ledger(store, engine.ledger.path)


def snapshot_ledger(store: TableStore, path: str | Path | None) -> int:
    """``publish_ledger`` of the ledger file at ``path``: on object storage every machine's
    ledger, this machine's new rows published first (``forge/llm/ledger_bucket.py``)."""
    if path is None:
        return 0
    contract = load_contract(LLM_LEDGER_TABLE)
    frame = contract.conform(merged_ledger(path, store.remote))
    return store.write(LLM_LEDGER_TABLE, frame, schema=contract.arrow_schema()).rows


def record_llm_attempts(
    store: TableStore, attempts: pd.DataFrame | Iterable[pd.DataFrame], partitions: Iterable[tuple[str, str]] = ()
) -> int:
    """Write refine-loop attempts (``RefineRun.attempts_frame()``, or a list of them, one per
    batch) to ``llm_attempts``; ``partitions`` are rewritten even when they had no attempts."""
    if not isinstance(attempts, pd.DataFrame):
        frames = [a for a in attempts if len(a)]
        attempts = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if len(attempts) and "advisory" in attempts.columns:  # rows a recipe built itself may leave it out
        attempts = attempts.assign(
            advisory=attempts["advisory"].astype(object).where(attempts["advisory"].notna(), False).astype(bool)
        )
    pairs = (
        set(map(tuple, attempts[["stage", "partition"]].drop_duplicates().itertuples(index=False)))
        if len(attempts)
        else set()
    )
    return _write_shared(store, LLM_ATTEMPTS_TABLE, attempts, pairs | set(partitions))


def current_prompt_hashes(prompts: Iterable[Prompt | str | Path]) -> dict[str, str]:
    """prompt name → hash of the file as it is now (re-read, so an edit shows at once)."""
    out = {}
    for p in prompts:
        if isinstance(p, Prompt):
            p = load_prompt(p.path) if p.path else p
        else:
            p = load_prompt(p)
        out[p.name] = p.hash
    return out


def count_outdated(df: pd.DataFrame, current: dict[str, str]) -> tuple[int, dict[str, int]]:
    """Rows whose prompt_hash is not their prompt's current hash (by prompt_name when present)."""
    if df.empty:
        return 0, {}
    if "prompt_name" in df.columns:
        expected = df["prompt_name"].map(current)
        bad = df[expected.isna() | (df["prompt_hash"] != expected)]
        return len(bad), bad["prompt_name"].fillna("?").value_counts().to_dict()
    bad = df[~df["prompt_hash"].isin(set(current.values()))]
    return len(bad), {"(any)": len(bad)}


def outdated_prompt_check(
    asset: str | dg.AssetKey,
    table: str,
    prompts: Iterable[Prompt | str | Path],
    name: str | None = None,
    column: str = "prompt_hash",
    only: Mapping[str, Any] | None = None,
) -> dg.AssetChecksDefinition:
    """A (warning) check: rows of ``table`` made with a prompt file that has since changed.

    ``column`` names the hash column (a table can carry several prompts' hashes);
    ``only`` restricts the rows that count to those matching every ``column: value``
    (e.g. ``{"origin": "llm"}``: human or imported rows have no prompt and never count).
    """
    prompts = list(prompts)
    key = dg.AssetKey(asset) if isinstance(asset, str) else asset
    only = dict(only or {})
    scope = (" among rows with " + ", ".join(f"{k} = {v!r}" for k, v in only.items())) if only else ""

    @dg.asset_check(
        asset=key,
        name=name or f"prompt_current_{table}",
        blocking=False,
        description=f"Rows of `{table}` whose {column} differs from the current prompt file's hash"
        f"{scope} (re-materialize to regenerate them).",
    )
    def _check(storage: StorageResource) -> dg.AssetCheckResult:
        store = storage.store
        df = store.read(table) if store.exists(table) else pd.DataFrame(columns=[column, *only])
        for col, value in only.items():
            df = df[df[col] == value]
        # prompt_name (when present) names the prompt of the main hash column only
        keep = [column] + (["prompt_name"] if column == "prompt_hash" and "prompt_name" in df.columns else [])
        df = df[keep].rename(columns={column: "prompt_hash"})
        current = current_prompt_hashes(prompts)
        n, by_prompt = count_outdated(df, current)
        return dg.AssetCheckResult(
            passed=n == 0,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "rows": len(df),
                "outdated_rows": n,
                "outdated_by_prompt": dg.MetadataValue.json(by_prompt),
                "current_hashes": dg.MetadataValue.json(current),
            },
        )

    return _check
