"""The LLM engine: cached, concurrent, schema-validated calls, one result per request.

``LLMEngine.run(stage, partition, requests)`` renders each request's prompt, looks its
content key up in the cache, sends what is missing concurrently (bounded in-flight
requests, RPM/TPM window, retries with backoff and jitter on 429/5xx/timeouts/connection
errors), validates each reply against the prompt's JSON schema, gives the model one
chance to repair an invalid reply, caches what is valid and returns ``LLMResult``s in
request order. A failure is a result with ``ok=False`` and a reason, never an exception
for the batch and never an empty string. Every call (and every cache hit) becomes a row
of the ``llm_calls`` table (``calls_frame()``).

The cache key is the request's content: backend, model, rendered messages (images by
content hash and encoding settings), generation parameters, the response schema and the
parser version. Editing one prompt changes only that prompt's keys; an unchanged re-run
makes zero calls.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from forge.llm.backends import Backend, BackendError, Reply
from forge.llm.cache import LLMCache, cache_key
from forge.llm.images import ImageEncoder
from forge.llm.limits import RateLimiter
from forge.llm.prompts import Prompt
from forge.llm.tokens import count_message_tokens
from forge.llm.types import LLMRequest, LLMResult

_log = logging.getLogger("subtext_forge.llm")
_log.setLevel(logging.INFO)  # progress lines; dagster.yaml hands this logger to Dagster

# Bump when reply parsing/validation changes: it is part of every cache key.
PARSER_VERSION = "1"

CALLS_COLUMNS = [
    "call_id", "stage", "partition", "item_id", "model", "backend", "prompt_name", "prompt_hash",
    "request_key", "tokens_in", "tokens_out", "latency_s", "cost_usd", "cache_hit", "attempt",
    "outcome", "error", "error_class", "mode", "created_at",
]
# outcome values: ok | cache_hit | invalid (reply failed the schema; repaired or rejected)
#                 | retry (transient error, retried) | failed (the item's final error)
OUTCOMES = ("ok", "cache_hit", "invalid", "retry", "failed")


@dataclass
class EngineSettings:
    model: str = "gpt-4o-mini"
    stage_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # stage → {model, params}
    default_params: dict[str, Any] = field(default_factory=dict)
    max_concurrency: int = 16
    rpm: int | None = None
    tpm: int | None = None
    max_retries: int = 6
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    timeout_s: float = 60.0
    structured_output: str = "auto"  # auto (json_schema, falls back) | json_schema | json_object
    repair: bool = True
    image_max_side: int = 768
    image_quality: int = 85
    batch_stages: tuple[str, ...] = ()  # stages sent through the Batch API (see forge/llm/batch.py)
    batch_poll_s: float = 30.0
    batch_max_wait_s: float = 26 * 3600.0
    batch_completion_window: str = "24h"
    batch_max_resubmits: int = 2
    batch_discount: float = 0.5          # batch price = discount × online price


@dataclass(frozen=True)
class Price:
    input_per_1m: float
    output_per_1m: float

    @classmethod
    def parse(cls, value: Any) -> Price:
        if isinstance(value, Price):
            return value
        if isinstance(value, Mapping):
            return cls(float(value.get("input", 0.0)), float(value.get("output", 0.0)))
        a, b = value
        return cls(float(a), float(b))


def price_for(prices: Mapping[str, Price], model: str) -> Price | None:
    """Exact model name first, then the longest configured prefix (``gpt-4o`` for ``gpt-4o-2024-08-06``)."""
    if model in prices:
        return prices[model]
    best = max((k for k in prices if model.startswith(k)), key=len, default=None)
    return prices[best] if best else None


class ReplyError(ValueError):
    """A reply that is not valid JSON or does not satisfy the schema."""

    def __init__(self, message: str, error_class: str):
        super().__init__(message)
        self.error_class = error_class


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)


def parse_reply(text: str, schema: dict[str, Any] | None, validator: Any = None) -> dict[str, Any]:
    """Parsed JSON satisfying ``schema`` (``{"text": ...}`` when the prompt has no schema)."""
    if schema is None:
        if not text or not text.strip():
            raise ReplyError("empty reply", "EmptyReply")
        return {"text": text}
    m = _FENCE.match(text or "")
    body = m.group(1) if m else (text or "")
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ReplyError(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", "JSONDecodeError") from exc
    if validator is None:
        import jsonschema

        validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.path), e.message))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.path) or "(root)"
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ReplyError(f"schema: at {where}: {e.message}{more}", "SchemaError")
    if not isinstance(data, dict):
        data = {"value": data}
    return data


@dataclass
class _Prepared:
    req: LLMRequest
    prompt: Prompt
    model: str
    params: dict[str, Any]
    base_messages: list[dict[str, Any]]   # text-only rendered prompt + extra messages
    key: str


class _Progress:
    """Logs requests done / total, rate and ETA (logger ``subtext_forge.llm``, which the
    instance's dagster.yaml hands to Dagster, so the lines show in the run's logs)."""

    def __init__(self, what: str, total: int, every_s: float = 10.0):
        self.what, self.total, self.every_s = what, total, every_s
        self.done, self.t0, self.last = 0, time.perf_counter(), time.perf_counter()

    def step(self) -> None:
        self.done += 1
        now = time.perf_counter()
        if now - self.last >= self.every_s or (self.done == self.total and now - self.t0 >= self.every_s):
            self.last = now
            rate = self.done / max(now - self.t0, 1e-9)
            _log.info("%s: %d/%d LLM requests (%.1f/s, ETA %.0fs)", self.what, self.done, self.total, rate,
                      (self.total - self.done) / rate)


class LLMEngine:
    def __init__(self, backend: Backend, cache: LLMCache, settings: EngineSettings | None = None,
                 prices: Mapping[str, Any] | None = None):
        self.backend, self.cache = backend, cache
        self.settings = settings or EngineSettings()
        self.prices = {k: Price.parse(v) for k, v in (prices or {}).items()}
        self.limiter = RateLimiter(self.settings.rpm, self.settings.tpm)
        self.images = ImageEncoder(self.settings.image_max_side, self.settings.image_quality)
        self._mode = "json_object" if self.settings.structured_output == "json_object" else "json_schema"
        self._rows: list[dict[str, Any]] = []
        self._rows_lock = threading.Lock()
        self._validators: dict[str, Any] = {}
        self._sem: asyncio.Semaphore | None = None
        self._sem_loop: Any = None
        self.in_flight = self.max_in_flight = 0

    # -- public ------------------------------------------------------------------------
    @property
    def backend_name(self) -> str:
        return self.backend.name

    def model_for(self, stage: str) -> str:
        return str(self.settings.stage_overrides.get(stage, {}).get("model") or self.settings.model)

    def run(self, stage: str, partition: str, requests: list[LLMRequest]) -> list[LLMResult]:
        """Synchronous entry point (asset bodies are sync): one result per request, in order."""
        if stage in self.settings.batch_stages and self.backend.name == "openai":
            from forge.llm.batch import run_batch

            return run_batch(self, stage, partition, requests)

        async def main() -> list[LLMResult]:
            try:
                return await self.arun(stage, partition, requests)
            finally:
                await self.backend.aclose()

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(main())
        # Called from inside a running loop (a notebook): run on a private loop in a thread.
        out: list[LLMResult] = []
        err: list[BaseException] = []

        def target() -> None:
            try:
                out.extend(asyncio.run(main()))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                err.append(exc)

        t = threading.Thread(target=target)
        t.start()
        t.join()
        if err:
            raise err[0]
        return out

    async def arun(self, stage: str, partition: str, requests: list[LLMRequest]) -> list[LLMResult]:
        progress = _Progress(f"{stage} {partition}", len(requests))

        async def one(r: LLMRequest) -> LLMResult:
            res = await self._process(stage, partition, r)
            progress.step()
            return res

        return list(await asyncio.gather(*(one(r) for r in requests)))

    def calls_frame(self, stage: str | None = None, partition: str | None = None) -> pd.DataFrame:
        with self._rows_lock:
            rows = [r for r in self._rows if (stage is None or r["stage"] == stage)
                    and (partition is None or r["partition"] == partition)]
        return pd.DataFrame(rows, columns=CALLS_COLUMNS)

    def stats(self) -> dict[str, Any]:
        df = self.calls_frame()
        items = df[df["outcome"].isin(["ok", "cache_hit", "failed"])] if len(df) else df
        return {
            "backend": self.backend.name,
            "model": self.settings.model,
            "calls": int(((~df["cache_hit"].astype(bool)) & (df["attempt"] > 0)).sum()) if len(df) else 0,
            "cache_hits": int(df["cache_hit"].astype(bool).sum()) if len(df) else 0,
            "items_ok": int((items["outcome"] != "failed").sum()) if len(items) else 0,
            "failures": int((df["outcome"] == "failed").sum()) if len(df) else 0,
            "retries": int((df["outcome"] == "retry").sum()) if len(df) else 0,
            "repairs": int((df["outcome"] == "invalid").sum()) if len(df) else 0,
            "tokens_in": int(df["tokens_in"].sum()) if len(df) else 0,
            "tokens_out": int(df["tokens_out"].sum()) if len(df) else 0,
            "cost_usd": round(float(df["cost_usd"].sum()), 6) if len(df) else 0.0,
            # Models the price table does not know: their cost shows as 0, which would mislead.
            "unpriced_models": sorted(m for m in df["model"].unique() if price_for(self.prices, m) is None)
            if len(df) and self.backend.name != "stub" else [],
        }

    def reset_calls(self) -> None:
        with self._rows_lock:
            self._rows.clear()

    # -- preparation -------------------------------------------------------------------
    def prepare(self, stage: str, req: LLMRequest) -> _Prepared:
        """Resolve model and params, render text messages and compute the cache key."""
        prompt: Prompt = req.prompt
        override = self.settings.stage_overrides.get(stage, {})
        model = str(override.get("model") or self.settings.model)
        params = {**self.settings.default_params, **prompt.params, **(override.get("params") or {}), **req.params}
        messages = prompt.render(req.variables) + list(req.extra_messages)
        key_messages = [dict(m) for m in messages]
        if req.images:
            image_keys = [self.images.key(i) for i in req.images]
            key_messages.append({"role": "images", "content": image_keys})
        key = cache_key({
            "backend": self.backend.name, "model": model, "messages": key_messages, "params": params,
            "schema": prompt.schema, "strict": prompt.strict, "parser": PARSER_VERSION,
        })
        return _Prepared(req=req, prompt=prompt, model=model, params=params, base_messages=messages, key=key)

    def _wire_messages(self, prep: _Prepared, tail: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Messages as sent: images attached to the last user turn; schema spelled out in json_object mode."""
        msgs = [dict(m) for m in prep.base_messages]
        if prep.req.images:
            idx = max(i for i, m in enumerate(msgs) if m["role"] == "user")
            text = msgs[idx]["content"]
            parts = text if isinstance(text, list) else [{"type": "text", "text": text}]
            msgs[idx] = {"role": "user", "content": parts + [self.images.part(i) for i in prep.req.images]}
        if prep.prompt.schema is not None and self._mode == "json_object":
            note = ("Reply with one JSON object only, satisfying this JSON Schema:\n"
                    + json.dumps(prep.prompt.schema, ensure_ascii=False))
            if msgs and msgs[0]["role"] == "system":
                msgs[0] = {"role": "system", "content": f"{msgs[0]['content']}\n\n{note}"}
            else:
                msgs.insert(0, {"role": "system", "content": note})
        return msgs + tail

    def _response_format(self, prompt: Prompt) -> dict[str, Any] | None:
        if prompt.schema is None:
            return None
        if self._mode == "json_object":
            return {"type": "json_object"}
        return {"type": "json_schema",
                "json_schema": {"name": prompt.schema_name, "schema": prompt.schema, "strict": prompt.strict}}

    def _validator(self, prompt: Prompt) -> Any:
        if prompt.schema is None:
            return None
        v = self._validators.get(prompt.hash)
        if v is None:
            import jsonschema

            v = self._validators[prompt.hash] = jsonschema.Draft202012Validator(prompt.schema)
        return v

    # -- accounting --------------------------------------------------------------------
    def _cost(self, model: str, tin: int, tout: int) -> float:
        if self.backend.name == "stub":   # offline placeholders: nothing is billed (issue 14)
            return 0.0
        p = price_for(self.prices, model)
        return 0.0 if p is None else (tin * p.input_per_1m + tout * p.output_per_1m) / 1e6

    def _record(self, stage: str, partition: str, prep: _Prepared | None, req: LLMRequest, *, model: str,
                attempt: int, outcome: str, tokens_in: int = 0, tokens_out: int = 0, latency_s: float = 0.0,
                error: str | None = None, error_class: str | None = None, cache_hit: bool = False,
                mode: str = "online", cost: float | None = None) -> None:
        prompt = req.prompt
        if cost is None and mode == "batch":
            cost = self._cost(model, tokens_in, tokens_out) * self.settings.batch_discount
        row = {
            "call_id": uuid.uuid4().hex[:16], "stage": stage, "partition": partition, "item_id": str(req.item_id),
            "model": model, "backend": self.backend.name, "prompt_name": getattr(prompt, "name", ""),
            "prompt_hash": getattr(prompt, "hash", ""), "request_key": prep.key if prep else "",
            "tokens_in": int(tokens_in), "tokens_out": int(tokens_out), "latency_s": round(float(latency_s), 4),
            "cost_usd": float(self._cost(model, tokens_in, tokens_out) if cost is None else cost),
            "cache_hit": bool(cache_hit), "attempt": int(attempt), "outcome": outcome,
            "error": (error or None) and str(error)[:2000], "error_class": error_class, "mode": mode,
            "created_at": datetime.now(timezone.utc),
        }
        with self._rows_lock:
            self._rows.append(row)

    def _result(self, prep: _Prepared | None, req: LLMRequest, *, ok: bool, data: dict[str, Any] | None = None,
                text: str | None = None, error: str | None = None, error_class: str | None = None,
                cached: bool = False, attempts: int = 0, tokens_in: int = 0, tokens_out: int = 0,
                latency_s: float = 0.0, model: str = "") -> LLMResult:
        return LLMResult(
            item_id=str(req.item_id), ok=ok, data=data if ok else None, text=text, error=error,
            error_class=error_class, prompt_name=getattr(req.prompt, "name", ""),
            prompt_hash=getattr(req.prompt, "hash", ""), model=model or (prep.model if prep else self.settings.model),
            backend=self.backend.name, cached=cached, attempts=attempts, tokens_in=tokens_in,
            tokens_out=tokens_out, cost_usd=self._cost(model or (prep.model if prep else ""), tokens_in, tokens_out),
            latency_s=latency_s, request_key=prep.key if prep else "",
        )

    # -- one request -------------------------------------------------------------------
    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._sem is None or self._sem_loop is not loop:
            self._sem, self._sem_loop = asyncio.Semaphore(max(1, self.settings.max_concurrency)), loop
        return self._sem

    async def _process(self, stage: str, partition: str, req: LLMRequest) -> LLMResult:
        try:
            prep = self.prepare(stage, req)
        except Exception as exc:  # noqa: BLE001 - a bad request (missing variable, unreadable image) fails alone
            model = self.model_for(stage)
            self._record(stage, partition, None, req, model=model, attempt=0, outcome="failed",
                         error=f"prepare: {exc}", error_class=type(exc).__name__)
            return self._result(None, req, ok=False, error=f"prepare: {exc}", error_class=type(exc).__name__,
                                model=model)
        hit = self.cache.get(prep.key)
        if hit is not None:
            self._record(stage, partition, prep, req, model=prep.model, attempt=0, outcome="cache_hit", cache_hit=True)
            return self._result(prep, req, ok=True, data=hit["data"], text=hit.get("text"), cached=True)
        return await self._call_and_parse(stage, partition, prep)

    async def _call_and_parse(self, stage: str, partition: str, prep: _Prepared, first_reply: Reply | None = None,
                              mode: str = "online") -> LLMResult:
        """Send (or take ``first_reply``, e.g. from a batch), validate, repair once, cache."""
        req, prompt = prep.req, prep.prompt
        tail: list[dict[str, Any]] = []
        attempt = 0
        tin = tout = 0
        t_start = time.perf_counter()
        repaired = False
        while True:
            try:
                if first_reply is not None:
                    reply, attempt, first_reply = first_reply, attempt + 1, None
                else:
                    reply, attempt = await self._send(stage, partition, prep, tail, attempt)
                    mode = "online"
            except BackendError as exc:
                attempt = getattr(exc, "attempt", attempt)
                return self._result(prep, req, ok=False, error=str(exc), error_class=f"Backend:{exc.kind or 'error'}",
                                    attempts=attempt, tokens_in=tin, tokens_out=tout,
                                    latency_s=time.perf_counter() - t_start)
            tin, tout = tin + reply.tokens_in, tout + reply.tokens_out
            try:
                if reply.finish_reason == "length":
                    raise ReplyError("reply truncated (finish_reason=length)", "Truncated")
                data = parse_reply(reply.text, prompt.schema, self._validator(prompt))
            except ReplyError as exc:
                last = not (self.settings.repair and not repaired)
                self._record(stage, partition, prep, req, model=prep.model, attempt=attempt,
                             outcome="failed" if last else "invalid", tokens_in=reply.tokens_in,
                             tokens_out=reply.tokens_out, latency_s=reply_latency(reply),
                             error=str(exc), error_class=exc.error_class, mode=mode)
                if last:
                    return self._result(prep, req, ok=False, text=reply.text,
                                        error=f"{exc} (after repair)" if repaired else str(exc),
                                        error_class=exc.error_class, attempts=attempt, tokens_in=tin,
                                        tokens_out=tout, latency_s=time.perf_counter() - t_start)
                # One repair: show the model its reply and what was wrong with it.
                repaired = True
                tail = tail + [
                    {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": (
                        f"Your reply could not be used: {exc}. Reply again with only a JSON object that "
                        "satisfies the required schema, with no other text.")},
                ]
                continue
            self._record(stage, partition, prep, req, model=prep.model, attempt=attempt, outcome="ok",
                         tokens_in=reply.tokens_in, tokens_out=reply.tokens_out, latency_s=reply_latency(reply),
                         mode=mode)
            self.cache.put(prep.key, {"data": data, "text": reply.text, "tokens_in": tin, "tokens_out": tout,
                                      "model": reply.model or prep.model}, model=prep.model, prompt_name=prompt.name)
            return self._result(prep, req, ok=True, data=data, text=reply.text, attempts=attempt, tokens_in=tin,
                                tokens_out=tout, latency_s=time.perf_counter() - t_start)

    async def _send(self, stage: str, partition: str, prep: _Prepared, tail: list[dict[str, Any]],
                    attempt: int) -> tuple[Reply, int]:
        """One reply, retrying transient errors with backoff; raises the last BackendError when out of retries."""
        s = self.settings
        retries = 0
        sem = self._semaphore()
        while True:
            messages = self._wire_messages(prep, tail)
            est = count_message_tokens(messages) + int(prep.params.get("max_tokens") or 0)
            async with sem:
                # Inside the slot, so a pause announced by a reply in flight stops the next send.
                await self.limiter.acquire(est)
                attempt += 1
                t0 = time.perf_counter()
                sent_mode = self._mode
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    reply = await self.backend.complete(prep.model, messages, prep.params,
                                                        self._response_format(prep.prompt), prep.prompt.schema, prep.key)
                    reply._latency = time.perf_counter() - t0  # type: ignore[attr-defined]
                    self.limiter.observe(reply.headers)
                    return reply, attempt
                except BackendError as exc:
                    err = exc
                finally:
                    self.in_flight -= 1
            latency = time.perf_counter() - t0
            self.limiter.observe(err.headers)
            if err.kind == "response_format" and sent_mode == "json_schema" and s.structured_output == "auto":
                # The endpoint has no json_schema response format: JSON mode + our own validation.
                self._mode = "json_object"
                self._record(stage, partition, prep, prep.req, model=prep.model, attempt=attempt, outcome="retry",
                             latency_s=latency, error=f"json_schema unsupported, using json_object: {err}",
                             error_class="Backend:response_format")
                continue
            if not err.retryable or retries >= s.max_retries:
                self._record(stage, partition, prep, prep.req, model=prep.model, attempt=attempt, outcome="failed",
                             latency_s=latency, error=str(err), error_class=f"Backend:{err.kind or 'error'}")
                err.attempt = attempt  # type: ignore[attr-defined]
                raise err
            retries += 1
            self._record(stage, partition, prep, prep.req, model=prep.model, attempt=attempt, outcome="retry",
                         latency_s=latency, error=str(err), error_class=f"Backend:{err.kind or 'error'}")
            backoff = min(s.backoff_max_s, s.backoff_base_s * 2 ** (retries - 1))
            delay = backoff / 2 + random.uniform(0, backoff / 2)  # "equal jitter"
            if err.retry_after is not None:
                # The endpoint said when: everyone waits that long (plus a little jitter).
                delay = err.retry_after + random.uniform(0, min(0.1 * err.retry_after + 0.01, 1.0))
                self.limiter.pause(err.retry_after)
            await asyncio.sleep(delay)


def reply_latency(reply: Reply) -> float:
    return float(getattr(reply, "_latency", 0.0))
