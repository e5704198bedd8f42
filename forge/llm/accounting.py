"""Accounting: the ``llm_calls`` rows, the spend ledger rows, prices and each result's cost."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from forge.llm.backends import Reply
from forge.llm.ledger import SpendLedger
from forge.llm.settings import EngineSettings
from forge.llm.types import LLMRequest, LLMResult, Prepared

CALLS_COLUMNS = [
    "call_id",
    "stage",
    "partition",
    "item_id",
    "model",
    "backend",
    "prompt_name",
    "prompt_hash",
    "request_key",
    "tokens_in",
    "tokens_out",
    "latency_s",
    "cost_usd",
    "cache_hit",
    "attempt",
    "outcome",
    "error",
    "error_class",
    "mode",
    "created_at",
]
# outcome values: ok | cache_hit | invalid (reply failed the schema; repaired or rejected)
#                 | retry (transient error, retried) | failed (the item's final error)
OUTCOMES = ("ok", "cache_hit", "invalid", "retry", "failed")


@dataclass(frozen=True)
class Price:
    input_per_1m: float
    output_per_1m: float
    audio_minute: float = 0.0  # transcription models billed by audio duration

    @classmethod
    def parse(cls, value: Any) -> Price:
        if isinstance(value, Price):
            return value
        if isinstance(value, Mapping):
            return cls(
                float(value.get("input", 0.0)), float(value.get("output", 0.0)), float(value.get("audio_minute", 0.0))
            )
        a, b, *c = value
        return cls(float(a), float(b), float(c[0]) if c else 0.0)


def price_for(prices: Mapping[str, Price], model: str) -> Price | None:
    """Exact model name first, then the longest configured prefix (``gpt-4o`` for ``gpt-4o-2024-08-06``)."""
    if model in prices:
        return prices[model]
    best = max((k for k in prices if model.startswith(k)), key=len, default=None)
    return prices[best] if best else None


@dataclass
class CallRecord:
    """What one attempt (or cache hit) of one request gave: a row of ``llm_calls``.

    ``cost`` None = priced from the tokens (at the batch discount in ``mode="batch"``)."""

    stage: str
    partition: str
    req: LLMRequest
    model: str
    attempt: int
    outcome: str  # one of OUTCOMES
    prep: Prepared | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    error: str | None = None
    error_class: str | None = None
    cache_hit: bool = False
    mode: str = "online"
    cost: float | None = None

    @classmethod
    def of(cls, stage: str, partition: str, prep: Prepared, attempt: int, outcome: str, **kw: Any) -> CallRecord:
        """The record of a prepared request (its request and model)."""
        return cls(stage, partition, prep.req, kw.pop("model", prep.model), attempt, outcome, prep=prep, **kw)

    @classmethod
    def of_reply(
        cls, stage: str, partition: str, prep: Prepared, attempt: int, outcome: str, reply: Reply, **kw: Any
    ) -> CallRecord:
        """The record of an attempt that got a reply: tokens and latency from the reply."""
        return cls.of(
            stage,
            partition,
            prep,
            attempt,
            outcome,
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            latency_s=reply_latency(reply),
            **kw,
        )


class Accounting:
    """One engine's accounts: its call log (``llm_calls``), its spend-ledger rows, prices and the
    cost on every result. Thread-safe (partitions in threads share one engine)."""

    def __init__(
        self, backend: str, endpoint: str, prices: Mapping[str, Any], ledger: SpendLedger, settings: EngineSettings
    ):
        self.backend, self.endpoint, self.ledger, self.settings = backend, endpoint, ledger, settings
        self.prices = {k: Price.parse(v) for k, v in prices.items()}
        self.session_id = uuid.uuid4().hex[:16]
        self._rows: list[dict[str, Any]] = []
        self._rows_lock = threading.Lock()

    def frame(self, stage: str | None = None, partition: str | None = None) -> pd.DataFrame:
        with self._rows_lock:
            rows = [
                r
                for r in self._rows
                if (stage is None or r["stage"] == stage) and (partition is None or r["partition"] == partition)
            ]
        return pd.DataFrame(rows, columns=CALLS_COLUMNS)

    def stats(self, status: Any) -> dict[str, Any]:
        """Totals of the call log, with the transport's ``status`` counters."""
        df = self.frame()
        items = df[df["outcome"].isin(["ok", "cache_hit", "failed"])] if len(df) else df
        return {
            "backend": self.backend,
            "model": self.settings.model,
            "calls": int(((~df["cache_hit"].astype(bool)) & (df["attempt"] > 0)).sum()) if len(df) else 0,
            "cache_hits": int(df["cache_hit"].astype(bool).sum()) if len(df) else 0,
            "items_ok": int((items["outcome"] != "failed").sum()) if len(items) else 0,
            "failures": int((df["outcome"] == "failed").sum()) if len(df) else 0,
            "retries": int((df["outcome"] == "retry").sum()) if len(df) else 0,
            "repairs": int((df["outcome"] == "invalid").sum()) if len(df) else 0,
            "timeouts": status.timed_out,
            "hedges": status.hedged,
            "lost_s": round(status.lost_s, 3),
            "tokens_in": int(df["tokens_in"].sum()) if len(df) else 0,
            "tokens_out": int(df["tokens_out"].sum()) if len(df) else 0,
            "cost_usd": round(float(df["cost_usd"].sum()), 6) if len(df) else 0.0,
            # Models the price table does not know: their cost shows as 0, which would mislead.
            "unpriced_models": sorted(m for m in df["model"].unique() if price_for(self.prices, m) is None)
            if len(df) and self.backend != "stub"
            else [],
        }

    def reset(self) -> None:
        with self._rows_lock:
            self._rows.clear()

    def cost(self, model: str, tin: int, tout: int, audio_s: float = 0.0) -> float:
        if self.backend == "stub":
            return 0.0  # nothing was billed
        p = price_for(self.prices, model)
        if p is None:
            return 0.0
        return (tin * p.input_per_1m + tout * p.output_per_1m) / 1e6 + audio_s / 60.0 * p.audio_minute

    def record(self, rec: CallRecord) -> None:
        """One ``llm_calls`` row."""
        cost = rec.cost
        if cost is None and rec.mode == "batch":
            cost = self.cost(rec.model, rec.tokens_in, rec.tokens_out) * self.settings.batch_discount
        prompt = rec.req.prompt
        row = {
            "call_id": uuid.uuid4().hex[:16],
            "stage": rec.stage,
            "partition": rec.partition,
            "item_id": str(rec.req.item_id),
            "model": rec.model,
            "backend": self.backend,
            "prompt_name": getattr(prompt, "name", ""),
            "prompt_hash": getattr(prompt, "hash", ""),
            "request_key": rec.prep.key if rec.prep else "",
            "tokens_in": int(rec.tokens_in),
            "tokens_out": int(rec.tokens_out),
            "latency_s": round(float(rec.latency_s), 4),
            "cost_usd": float(self.cost(rec.model, rec.tokens_in, rec.tokens_out) if cost is None else cost),
            "cache_hit": bool(rec.cache_hit),
            "attempt": int(rec.attempt),
            "outcome": rec.outcome,
            "error": (rec.error or None) and str(rec.error)[:2000],
            "error_class": rec.error_class,
            "mode": rec.mode,
            "created_at": datetime.now(UTC),
        }
        with self._rows_lock:
            self._rows.append(row)

    def ledger_row(
        self,
        stage: str,
        partition: str,
        prep: Prepared,
        *,
        request_id: str,
        kind: str,
        status: str,
        tokens_in: int = 0,
        tokens_out: int = 0,
        latency_s: float = 0.0,
        response_id: str | None = None,
        error: str | None = None,
        model: str | None = None,
        audio_s: float = 0.0,
    ) -> None:
        """One ledger row, committed before the caller looks at the reply."""
        model = model or prep.model
        cost = self.cost(model, tokens_in, tokens_out, audio_s)
        if kind == "batch":
            cost *= self.settings.batch_discount
        self.ledger.append(
            {
                "request_id": request_id,
                "session_id": self.session_id,
                "pid": os.getpid(),
                "stage": stage,
                "partition": partition,
                "item_id": str(prep.req.item_id),
                "endpoint": self.endpoint,
                "backend": self.backend,
                "model": model,
                "prompt_name": getattr(prep.prompt, "name", ""),
                "request_key": prep.key,
                "kind": kind,
                "status": status,
                "tokens_in": tokens_in,
                "tokens_out": tokens_out,
                "cost_usd": cost,
                "latency_s": latency_s,
                "response_id": response_id,
                "error": (error or None) and str(error)[:500],
                "created_at": datetime.now(UTC),
            }
        )

    def result(
        self,
        prep: Prepared | None,
        req: LLMRequest,
        *,
        ok: bool,
        data: dict[str, Any] | None = None,
        text: str | None = None,
        error: str | None = None,
        error_class: str | None = None,
        cached: bool = False,
        attempts: int = 0,
        tokens_in: int = 0,
        tokens_out: int = 0,
        latency_s: float = 0.0,
        model: str = "",
    ) -> LLMResult:
        return LLMResult(
            item_id=str(req.item_id),
            ok=ok,
            data=data if ok else None,
            text=text,
            error=error,
            error_class=error_class,
            prompt_name=getattr(req.prompt, "name", ""),
            prompt_hash=getattr(req.prompt, "hash", ""),
            model=model or (prep.model if prep else self.settings.model),
            backend=self.backend,
            cached=cached,
            attempts=attempts,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost_usd=self.cost(model or (prep.model if prep else ""), tokens_in, tokens_out),
            latency_s=latency_s,
            request_key=prep.key if prep else "",
        )


def reply_latency(reply: Reply) -> float:
    return float(getattr(reply, "_latency", 0.0))
