"""The LLM engine: cached, concurrent, schema-validated calls that flow per item.

``LLMEngine.run(stage, partition, requests)`` renders each request's prompt, looks its
content key up in the cache, sends what is missing concurrently (bounded in-flight
requests, RPM/TPM window, retries on 429/5xx/timeouts/connection errors with a budget per
kind), validates each reply against the prompt's JSON schema, repairs an invalid reply
(budget per error class), caches what is valid and returns ``LLMResult``s in request order.
A failure is a result with ``ok=False`` and a reason, never an exception for the batch and
never an empty string. Every attempt (and every cache hit) becomes a row of the
``llm_calls`` table (``calls_frame()``) and of the append-only spend ledger
(``forge/llm/ledger.py``), the latter written the moment the reply arrives.

One event loop per engine runs in a background thread: ``run`` may be called from several
threads at once (partitions, refine checks) and every call shares one client, one
concurrency budget and one rate limiter. ``acall`` is the per-item async entry point the
refine loop uses, so an item's next step starts as soon as its own call returns.

Deadlines: connect, first-byte and total timeouts (per stage); a request slower than the
adaptive deadline (``hedge_factor`` × the p90 latency seen for this endpoint and model) is
hedged — a second copy is sent and the first reply wins — or, with hedging off, cancelled
and retried at once. Timeouts are retried at once (no backoff) within their budget.

The cache key is the request's content and where it goes: endpoint identity (provider name
or base URL), backend, model, rendered messages (images by content hash and encoding
settings), generation parameters, the response schema and the parser version.

``transcribe(stage, partition, audio_requests)`` is the audio entry point
(``audio.transcriptions``): same send path (retries, hedging, limits, ledger), cache keyed by
the audio's content hash, model and endpoint.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import random
import re
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import pandas as pd

from forge.llm.backends import Backend, BackendError, Reply
from forge.llm.cache import LLMCache, cache_key
from forge.llm.images import ImageEncoder
from forge.llm.ledger import SpendLedger, ledger_beside
from forge.llm.limits import RateLimiter, Slots
from forge.llm.prompts import Prompt
from forge.llm.tokens import count_message_tokens
from forge.llm.types import AudioRequest, LLMRequest, LLMResult
from forge.versioning import sha256_bytes

T = TypeVar("T")
_log = logging.getLogger("subtext_forge.llm")
_log.setLevel(logging.INFO)  # progress lines; dagster.yaml hands this logger to Dagster

# Bump when reply parsing/validation changes: it is part of every cache key.
PARSER_VERSION = "1"

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


@dataclass
class EngineSettings:
    model: str = "gpt-4o-mini"
    transcription_model: str = "whisper-1"  # audio.transcriptions (a stage override's model wins)
    stage_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # stage → {model, params}
    default_params: dict[str, Any] = field(default_factory=dict)
    max_concurrency: int = 16
    rpm: int | None = None
    tpm: int | None = None
    max_retries: int = 6  # default retry budget of every transient kind (see retry_budgets)
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    timeout_s: float = 60.0  # total time for one request
    connect_timeout_s: float = 10.0
    first_byte_timeout_s: float | None = None  # None = timeout_s (a JSON reply arrives in one piece)
    # Hedging / adaptive deadline: a request slower than hedge_after_s (None = adaptive:
    # hedge_factor × p90 latency of this endpoint+model, at least hedge_min_s; hedge_initial_s
    # until hedge_min_samples are known) gets a second copy, first reply wins; with hedge off
    # it is cancelled and retried at once.
    hedge: bool = True
    hedge_after_s: float | None = None
    hedge_factor: float = 2.0
    hedge_min_s: float = 0.5
    hedge_initial_s: float = 20.0
    hedge_min_samples: int = 20
    hedge_max_share: float = 0.1  # at most this share of requests may be hedges
    # Retry budgets per transient kind: rate_limit, server, timeout, connection, malformed.
    retry_budgets: dict[str, int] = field(default_factory=dict)
    # Repair budgets per invalid-reply class: JSONDecodeError, SchemaError, Truncated, EmptyReply.
    repair_budgets: dict[str, int] = field(default_factory=dict)
    structured_output: str = "auto"  # auto (json_schema, falls back) | json_schema | json_object
    repair: bool = True  # False: no repair turns at all
    # The model under evaluation: one request per item, its reply as it came is the answer. No
    # repair turns; a reply to a prompt without a schema is accepted whatever it is (empty,
    # truncated) and cached, so the scorer applies the paper's rule to it. Transport retries stay.
    verbatim: bool = False
    provider: str | None = None  # endpoint identity in cache keys and the ledger (default: base URL)
    progress_every_s: float = 10.0
    image_max_side: int = 768
    image_quality: int = 85
    batch_stages: tuple[str, ...] = ()  # stages sent through the Batch API (see forge/llm/batch.py)
    batch_poll_s: float = 30.0
    batch_max_wait_s: float = 26 * 3600.0
    batch_completion_window: str = "24h"
    batch_max_resubmits: int = 2
    batch_discount: float = 0.5  # batch price = discount × online price

    def stage(self, stage: str, name: str) -> Any:
        """A setting as seen by one stage: ``stage_overrides[stage][name]`` wins over the global one."""
        over = self.stage_overrides.get(stage) or {}
        return over[name] if name in over and over[name] is not None else getattr(self, name)


THROTTLE_PAUSE_SHARE = 0.25  # share of 429s among recent replies above which a 429 pauses every caller
MAX_COPIES = 3  # copies of one request in flight at once (original + hedges)
DEFAULT_REPAIRS = {"JSONDecodeError": 3, "SchemaError": 3, "Truncated": 1, "EmptyReply": 2}
TRANSIENT_KINDS = ("rate_limit", "server", "timeout", "connection", "malformed")
# Settings a stage override may carry besides model and params.
STAGE_KEYS = (
    "timeout_s",
    "connect_timeout_s",
    "first_byte_timeout_s",
    "hedge",
    "hedge_after_s",
    "hedge_factor",
    "retry_budgets",
    "repair_budgets",
)


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
    base_messages: list[dict[str, Any]]  # text-only rendered prompt + extra messages
    key: str
    audio: AudioRequest | None = None  # set: an audio.transcriptions request, not a chat completion


@dataclass(frozen=True)
class _TranscriptionPrompt:
    """What the call log and ledger read of a prompt, for transcription requests (no template)."""

    name: str = "audio_transcription"
    hash: str = ""
    schema: None = None
    strict: bool = False


TRANSCRIPTION = _TranscriptionPrompt()


_SHARED_LAST: dict[str, float] = {}  # progress name → when a line of that name was last logged
_SHARED_LIVE: dict[str, int] = {}  # progress name → runs of that name now running
_SHARED_LOCK = threading.Lock()


class _Progress:
    """Logs requests done / total, rate, ETA and what the rest are doing — in flight, waiting on a
    retry-after, timed out so far — every ``every_s`` (also while nothing completes, so a stall
    shows as a stall). Logger ``subtext_forge.llm``, which the instance's dagster.yaml hands to
    Dagster, so the lines show in the run's logs."""

    def __init__(self, what: str, total: int, every_s: float = 10.0):
        self.what, self.total, self.every_s = what, total, every_s
        self.done, self.t0, self.last = 0, time.perf_counter(), time.perf_counter()
        self.status: _Status | None = None

    def line(self) -> str:
        now = time.perf_counter()
        rate = self.done / max(now - self.t0, 1e-9)
        eta = f"{(self.total - self.done) / rate:.0f}s" if rate > 0 else "?"
        text = f"{self.what}: {self.done}/{self.total} LLM requests ({rate:.1f}/s, ETA {eta})"
        if self.status is not None:
            text += "; " + self.status.describe()
        return text

    def _turn(self, now: float, every: float, final: bool = False) -> bool:
        """Whether this run may log now: at its own pace (a final line always), and, while other
        runs of the same name are live, one line per name per ``every`` among them (MAIA's pools
        of a batch are ~100 refine runs of one name; stalled together they would each log)."""
        if not final and now - self.last < every:
            return False
        with _SHARED_LOCK:
            if _SHARED_LIVE.get(self.what, 0) > 1 and now - _SHARED_LAST.get(self.what, -1e18) < every:
                return False
            _SHARED_LAST[self.what] = now
        self.last = now
        return True

    def start(self) -> asyncio.Future[None]:
        """The background ticker, counted live under its name until the task ends (also when it
        is cancelled before its first step, hence a done callback, not a ``finally``)."""
        with _SHARED_LOCK:
            _SHARED_LIVE[self.what] = _SHARED_LIVE.get(self.what, 0) + 1
        task = asyncio.ensure_future(self.tick())
        task.add_done_callback(lambda _t: self.close())
        return task

    def close(self) -> None:
        with _SHARED_LOCK:
            left = _SHARED_LIVE.get(self.what, 1) - 1
            if left > 0:
                _SHARED_LIVE[self.what] = left
            else:
                _SHARED_LIVE.pop(self.what, None)
                _SHARED_LAST.pop(self.what, None)

    def step(self) -> None:
        self.done += 1
        now = time.perf_counter()
        final = self.done == self.total and now - self.t0 >= self.every_s
        if self._turn(now, self.every_s, final):
            _log.info("%s", self.line())

    async def tick(self) -> None:
        """Background ticker: a line every ``every_s`` even when no request completes."""
        every = max(self.every_s, 0.5)
        while self.done < self.total:
            await asyncio.sleep(every)
            if self.done < self.total and self._turn(time.perf_counter(), every):
                _log.info("%s", self.line())


@dataclass
class _Status:
    """What the engine's requests are doing now (gauges) and have suffered (counters)."""

    in_flight: int = 0  # HTTP requests sent and not yet answered (hedges included)
    waiting_retry_after: int = 0  # requests sleeping until an endpoint-announced retry-after
    backing_off: int = 0  # requests sleeping in exponential backoff
    timed_out: int = 0  # attempts that hit a deadline (connect, first byte, total, adaptive)
    hedged: int = 0  # hedge copies sent
    hedge_wins: int = 0  # hedges that answered first
    lost_s: float = 0.0  # seconds spent on attempts that gave nothing usable

    def describe(self) -> str:
        return (
            f"in flight {self.in_flight}, waiting on retry-after {self.waiting_retry_after}, "
            f"backing off {self.backing_off}, timed out {self.timed_out}, hedged {self.hedged}"
        )


class _LoopThread:
    """The engine's private event loop, in a daemon thread; ``run`` submits coroutines to it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._serve, daemon=True, name="llm-engine")
        self.thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self, backend: Any) -> None:
        if self.loop.is_closed():
            return
        if self.thread.is_alive() and threading.current_thread() is not self.thread:
            try:
                self.submit(backend.aclose()).result(timeout=5)
            except Exception as exc:  # noqa: BLE001 - closing is best effort
                _log.debug("closing the LLM client: %s", exc)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)
        if not self.loop.is_running():
            self.loop.close()


# Set by the refine loop on the thread that runs a check: ``run`` releases it while it waits,
# so checks that call the LLM (NLI) overlap while their CPU parts stay serialized per check.
_check_ctx = threading.local()


class LLMEngine:
    def __init__(
        self,
        backend: Backend,
        cache: LLMCache,
        settings: EngineSettings | None = None,
        prices: Mapping[str, Any] | None = None,
        ledger: SpendLedger | None = None,
    ):
        self.backend, self.cache = backend, cache
        self.settings = settings or EngineSettings()
        self.prices = {k: Price.parse(v) for k, v in (prices or {}).items()}
        self.limiter = RateLimiter(self.settings.rpm, self.settings.tpm)
        self.images = ImageEncoder(self.settings.image_max_side, self.settings.image_quality)
        # Engines built without a resource (evals) still record spend: the ledger beside their cache.
        self.ledger = ledger if ledger is not None else SpendLedger(ledger_beside(cache.path))
        self.endpoint = self.settings.provider or str(getattr(backend, "endpoint", "") or backend.name).rstrip("/")
        self.session_id = uuid.uuid4().hex[:16]
        self.status = _Status()
        self._mode = "json_object" if self.settings.structured_output == "json_object" else "json_schema"
        self._rows: list[dict[str, Any]] = []
        self._rows_lock = threading.Lock()
        self._validators: dict[str, Any] = {}
        self._sem: Slots | None = None
        self._sem_loop: Any = None
        self._latency: dict[str, deque[float]] = {}
        self._sent = 0
        self._recent: deque[bool] = deque(maxlen=40)  # recent replies: True = 429
        self._warm_loop: Any = None
        self._answered_loop: Any = None  # the loop on which a reply has arrived (client warmed up)
        self._answered_at = 0.0
        self._loop: _LoopThread | None = None
        self._loop_lock = threading.Lock()
        self.check_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(4, self.settings.max_concurrency), thread_name_prefix="llm-check"
        )
        self._finalizer = weakref.finalize(self, _shutdown, self.__dict__)

    @property
    def in_flight(self) -> int:
        return self.status.in_flight

    max_in_flight = 0

    # -- public ------------------------------------------------------------------------
    @property
    def backend_name(self) -> str:
        return self.backend.name

    def model_for(self, stage: str) -> str:
        return str(self.settings.stage_overrides.get(stage, {}).get("model") or self.settings.model)

    def run(self, stage: str, partition: str, requests: list[LLMRequest]) -> list[LLMResult]:
        """Synchronous entry point (asset bodies are sync): one result per request, in order.

        Thread-safe: concurrent calls (partitions in threads, refine checks) share the engine's
        loop, client, concurrency budget and rate limits."""
        if self.uses_batch_api(stage):
            from forge.llm.batch import arun_batch

            return self.wait(arun_batch(self, stage, partition, requests))
        return self.wait(self.arun(stage, partition, requests))

    def uses_batch_api(self, stage: str) -> bool:
        """Whether ``run`` sends this stage's requests as one Batch API job (``batch_stages``)."""
        return stage in self.settings.batch_stages and self.backend.name == "openai"

    def flow(self, label: str, items: list[Any], chain: Callable[[Any], Awaitable[T]]) -> list[T]:
        """``await chain(item)`` for every item at once on the engine's loop, results in item order.

        For multi-step work per item (generate → check → rate): each item moves on as soon as its
        own reply is in, so one slow reply holds up only its own item, not a stage-wide round.
        ``chain`` uses ``acall``; one progress line per ``label`` counts finished items."""
        return self.wait(self._aflow(label, items, chain))

    def map_partitions(self, keys: list[str], body: Any, parallel: int | None = None) -> list[Any]:
        """``body(key)`` for every partition key at once, in threads, results in key order.

        The bodies' ``run`` / ``refine`` calls share this engine's concurrency budget, so a slow
        item in one partition never holds up the next partition. ``body`` must not share
        mutable state across keys without a lock (return per-partition results instead)."""
        keys = list(keys)
        if len(keys) <= 1:
            return [body(k) for k in keys]
        with concurrent.futures.ThreadPoolExecutor(
            max_workers=parallel or len(keys), thread_name_prefix="llm-partition"
        ) as pool:
            futures = [pool.submit(body, k) for k in keys]
            concurrent.futures.wait(futures)
            return [f.result() for f in futures]

    def wait(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coro`` on the engine's loop and block this thread until it is done."""
        loop = self._ensure_loop()
        if threading.current_thread() is loop.thread:
            coro.close()
            raise RuntimeError("LLMEngine.run called from the engine's own loop: await engine.arun(...) instead")
        fut = loop.submit(coro)
        held = getattr(_check_ctx, "lock", None)
        if held is not None:
            held.release()
        try:
            return fut.result()
        finally:
            if held is not None:
                held.acquire()

    def close(self) -> None:
        """Close the client and stop the loop thread (also done when the engine is collected)."""
        self._finalizer()

    def _ensure_loop(self) -> _LoopThread:
        with self._loop_lock:
            if self._loop is None or self._loop.loop.is_closed():
                self._loop = _LoopThread()
            return self._loop

    async def arun(self, stage: str, partition: str, requests: list[LLMRequest]) -> list[LLMResult]:
        return await self._aflow(f"{stage} {partition}", requests, lambda r: self.acall(stage, partition, r))

    async def _aflow(self, label: str, items: list[Any], chain: Callable[[Any], Awaitable[T]]) -> list[T]:
        """``chain(item)`` for every item at once, results in item order, one progress line per label."""
        progress = _Progress(label, len(items))
        progress.status = self.status
        ticker = progress.start() if items else None

        async def one(item: Any) -> T:
            out = await chain(item)
            progress.step()
            return out

        try:
            return list(await asyncio.gather(*(one(x) for x in items)))
        finally:
            if ticker is not None:
                ticker.cancel()

    async def acall(self, stage: str, partition: str, req: LLMRequest) -> LLMResult:
        """One request end to end (cache, send, validate, repair); must run on the engine's loop
        when mixed with ``run`` (the refine loop does)."""
        return await self._process(stage, partition, req)

    # -- audio ---------------------------------------------------------------------------
    def transcribe(self, stage: str, partition: str, requests: list[AudioRequest]) -> list[LLMResult]:
        """Transcripts through the endpoint's ``audio.transcriptions``: one result per request, in
        order (``data = {"text": ...}``), with the chat calls' cache, retries, hedging, rate limits,
        call log and ledger. The stub backend answers a ``[stub]``-marked text, never speech."""
        return self.wait(self.atranscribe(stage, partition, requests))

    async def atranscribe(self, stage: str, partition: str, requests: list[AudioRequest]) -> list[LLMResult]:
        progress = _Progress(f"{stage} {partition}", len(requests))
        progress.status = self.status

        async def one(r: AudioRequest) -> LLMResult:
            res = await self._process_audio(stage, partition, r)
            progress.step()
            return res

        return list(await asyncio.gather(*(one(r) for r in requests)))

    def transcription_model(self, stage: str) -> str:
        return str(self.settings.stage_overrides.get(stage, {}).get("model") or self.settings.transcription_model)

    def prepare_audio(self, stage: str, audio: AudioRequest) -> _Prepared:
        """Model, params and cache key (audio content hash + model + endpoint + params)."""
        model = self.transcription_model(stage)
        # Chat defaults (max_tokens, response_format...) are not transcription arguments.
        params = {**((self.settings.stage_overrides.get(stage) or {}).get("params") or {}), **audio.params}
        key = cache_key(
            {
                "kind": "audio_transcription",
                "endpoint": self.endpoint,
                "backend": self.backend.name,
                "model": model,
                "audio": sha256_bytes(audio.data),
                "params": params,
                "parser": PARSER_VERSION,
            }
        )
        req = LLMRequest(item_id=audio.item_id, prompt=TRANSCRIPTION)
        return _Prepared(
            req=req, prompt=TRANSCRIPTION, model=model, params=params, base_messages=[], key=key, audio=audio
        )  # type: ignore[arg-type]

    async def _process_audio(self, stage: str, partition: str, audio: AudioRequest) -> LLMResult:
        prep = self.prepare_audio(stage, audio)
        req = prep.req
        hit = self.cache.get(prep.key)
        if hit is not None:
            self._record(stage, partition, prep, req, model=prep.model, attempt=0, outcome="cache_hit", cache_hit=True)
            self._ledger(stage, partition, prep, request_id=f"hit-{uuid.uuid4().hex}", kind="cache_hit", status="ok")
            return self._result(prep, req, ok=True, data=hit["data"], text=hit.get("text"), cached=True)
        t_start = time.perf_counter()
        try:
            reply, attempt = await self._send(stage, partition, prep, [], 0)
        except BackendError as exc:
            return self._result(
                prep,
                req,
                ok=False,
                error=str(exc),
                error_class=f"Backend:{exc.kind or 'error'}",
                attempts=getattr(exc, "attempt", 0),
                latency_s=time.perf_counter() - t_start,
            )
        cost = self._cost(prep.model, reply.tokens_in, reply.tokens_out, reply.audio_s)
        self._record(
            stage,
            partition,
            prep,
            req,
            model=prep.model,
            attempt=attempt,
            outcome="ok",
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            latency_s=reply_latency(reply),
            cost=cost,
        )
        data = {"text": reply.text.strip()}  # an empty text is an answer (no speech), cached like any
        self.cache.put(
            prep.key,
            {
                "data": data,
                "text": reply.text,
                "tokens_in": reply.tokens_in,
                "tokens_out": reply.tokens_out,
                "model": reply.model or prep.model,
                "audio_s": reply.audio_s,
            },
            model=prep.model,
            prompt_name=TRANSCRIPTION.name,
        )
        result = self._result(
            prep,
            req,
            ok=True,
            data=data,
            text=reply.text,
            attempts=attempt,
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            latency_s=time.perf_counter() - t_start,
        )
        result.cost_usd = cost
        return result

    def calls_frame(self, stage: str | None = None, partition: str | None = None) -> pd.DataFrame:
        with self._rows_lock:
            rows = [
                r
                for r in self._rows
                if (stage is None or r["stage"] == stage) and (partition is None or r["partition"] == partition)
            ]
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
            "timeouts": self.status.timed_out,
            "hedges": self.status.hedged,
            "lost_s": round(self.status.lost_s, 3),
            "tokens_in": int(df["tokens_in"].sum()) if len(df) else 0,
            "tokens_out": int(df["tokens_out"].sum()) if len(df) else 0,
            "cost_usd": round(float(df["cost_usd"].sum()), 6) if len(df) else 0.0,
            # Models the price table does not know: their cost shows as 0, which would mislead.
            "unpriced_models": sorted(m for m in df["model"].unique() if price_for(self.prices, m) is None)
            if len(df) and self.backend.name != "stub"
            else [],
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
        key = cache_key(
            {
                "endpoint": self.endpoint,
                "backend": self.backend.name,
                "model": model,
                "messages": key_messages,
                "params": params,
                "schema": prompt.schema,
                "strict": prompt.strict,
                "parser": PARSER_VERSION,
            }
        )
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
            note = "Reply with one JSON object only, satisfying this JSON Schema:\n" + json.dumps(
                prep.prompt.schema, ensure_ascii=False
            )
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
        return {
            "type": "json_schema",
            "json_schema": {"name": prompt.schema_name, "schema": prompt.schema, "strict": prompt.strict},
        }

    def _validator(self, prompt: Prompt) -> Any:
        if prompt.schema is None:
            return None
        v = self._validators.get(prompt.hash)
        if v is None:
            import jsonschema

            v = self._validators[prompt.hash] = jsonschema.Draft202012Validator(prompt.schema)
        return v

    # -- accounting --------------------------------------------------------------------
    def _cost(self, model: str, tin: int, tout: int, audio_s: float = 0.0) -> float:
        if self.backend.name == "stub":
            return 0.0  # nothing was billed
        p = price_for(self.prices, model)
        if p is None:
            return 0.0
        return (tin * p.input_per_1m + tout * p.output_per_1m) / 1e6 + audio_s / 60.0 * p.audio_minute

    def _record(
        self,
        stage: str,
        partition: str,
        prep: _Prepared | None,
        req: LLMRequest,
        *,
        model: str,
        attempt: int,
        outcome: str,
        tokens_in: int = 0,
        tokens_out: int = 0,
        latency_s: float = 0.0,
        error: str | None = None,
        error_class: str | None = None,
        cache_hit: bool = False,
        mode: str = "online",
        cost: float | None = None,
    ) -> None:
        prompt = req.prompt
        if cost is None and mode == "batch":
            cost = self._cost(model, tokens_in, tokens_out) * self.settings.batch_discount
        row = {
            "call_id": uuid.uuid4().hex[:16],
            "stage": stage,
            "partition": partition,
            "item_id": str(req.item_id),
            "model": model,
            "backend": self.backend.name,
            "prompt_name": getattr(prompt, "name", ""),
            "prompt_hash": getattr(prompt, "hash", ""),
            "request_key": prep.key if prep else "",
            "tokens_in": int(tokens_in),
            "tokens_out": int(tokens_out),
            "latency_s": round(float(latency_s), 4),
            "cost_usd": float(self._cost(model, tokens_in, tokens_out) if cost is None else cost),
            "cache_hit": bool(cache_hit),
            "attempt": int(attempt),
            "outcome": outcome,
            "error": (error or None) and str(error)[:2000],
            "error_class": error_class,
            "mode": mode,
            "created_at": datetime.now(UTC),
        }
        with self._rows_lock:
            self._rows.append(row)

    def _ledger(
        self,
        stage: str,
        partition: str,
        prep: _Prepared,
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
        cost = self._cost(model, tokens_in, tokens_out, audio_s)
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
                "backend": self.backend.name,
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

    def _result(
        self,
        prep: _Prepared | None,
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
            backend=self.backend.name,
            cached=cached,
            attempts=attempts,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost_usd=self._cost(model or (prep.model if prep else ""), tokens_in, tokens_out),
            latency_s=latency_s,
            request_key=prep.key if prep else "",
        )

    # -- budgets and deadlines -----------------------------------------------------------
    def retry_budget(self, stage: str, kind: str) -> int:
        budgets = {
            **self.settings.retry_budgets,
            **(self.settings.stage_overrides.get(stage, {}).get("retry_budgets") or {}),
        }
        return int(budgets.get(kind, self.settings.max_retries))

    def repair_budget(self, stage: str, error_class: str) -> int:
        if not self.settings.repair or self.settings.verbatim:
            return 0
        budgets = {
            **DEFAULT_REPAIRS,
            **self.settings.repair_budgets,
            **(self.settings.stage_overrides.get(stage, {}).get("repair_budgets") or {}),
        }
        return int(budgets.get(error_class, 1))

    def timeouts(self, stage: str) -> dict[str, float]:
        s = self.settings
        total = float(s.stage(stage, "timeout_s"))
        first = s.stage(stage, "first_byte_timeout_s")
        return {
            "connect": float(s.stage(stage, "connect_timeout_s")),
            "first_byte": min(total, float(first)) if first else total,
            "total": total,
        }

    def _latencies(self, model: str) -> deque[float]:
        d = self._latency.get(model)
        if d is None:
            # Seeded from the ledger: earlier steps' calls to this endpoint and model.
            try:
                seed = self.ledger.recent_latencies(self.endpoint, model, 256)
            except Exception:  # noqa: BLE001 - a seed is an optimisation only
                seed = []
            d = self._latency[model] = deque(reversed(seed), maxlen=256)
        return d

    def hedge_deadline(self, stage: str, model: str) -> float | None:
        """Seconds after which a request counts as stalled (hedged or cancelled); None = never."""
        s = self.settings
        fixed = s.stage(stage, "hedge_after_s")
        first_byte = self.timeouts(stage)["first_byte"]
        if fixed is not None:
            after = float(fixed)
        else:
            lat = self._latencies(model)
            if len(lat) < 5:
                after = float(s.hedge_initial_s)
            else:
                ordered = sorted(lat)
                p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
                # fewer than hedge_min_samples: twice as patient, the estimate is rough
                factor = float(s.stage(stage, "hedge_factor")) * (2.0 if len(lat) < s.hedge_min_samples else 1.0)
                after = max(float(s.hedge_min_s), factor * p90)
        return after if after < first_byte else None

    def _throttled_share(self) -> float:
        return sum(self._recent) / len(self._recent) if len(self._recent) >= 8 else 1.0

    # -- one request -------------------------------------------------------------------
    def _semaphore(self) -> Slots:
        loop = asyncio.get_running_loop()
        if self._sem is None or self._sem_loop is not loop:
            self._sem, self._sem_loop = Slots(self.settings.max_concurrency), loop
        return self._sem

    async def _process(self, stage: str, partition: str, req: LLMRequest) -> LLMResult:
        try:
            prep = self.prepare(stage, req)
        except Exception as exc:  # noqa: BLE001 - a bad request (missing variable, unreadable image) fails alone
            model = self.model_for(stage)
            self._record(
                stage,
                partition,
                None,
                req,
                model=model,
                attempt=0,
                outcome="failed",
                error=f"prepare: {exc}",
                error_class=type(exc).__name__,
            )
            return self._result(
                None, req, ok=False, error=f"prepare: {exc}", error_class=type(exc).__name__, model=model
            )
        hit = self.cache.get(prep.key)
        if hit is not None:
            self._record(stage, partition, prep, req, model=prep.model, attempt=0, outcome="cache_hit", cache_hit=True)
            self._ledger(stage, partition, prep, request_id=f"hit-{uuid.uuid4().hex}", kind="cache_hit", status="ok")
            return self._result(prep, req, ok=True, data=hit["data"], text=hit.get("text"), cached=True)
        return await self._call_and_parse(stage, partition, prep)

    async def _call_and_parse(
        self, stage: str, partition: str, prep: _Prepared, first_reply: Reply | None = None, mode: str = "online"
    ) -> LLMResult:
        """Send (or take ``first_reply``, e.g. from a batch), validate, repair within budget, cache."""
        req, prompt = prep.req, prep.prompt
        tail: list[dict[str, Any]] = []
        attempt = 0
        tin = tout = 0
        t_start = time.perf_counter()
        repairs: dict[str, int] = {}
        while True:
            try:
                if first_reply is not None:
                    reply, attempt, first_reply = first_reply, attempt + 1, None
                    self._ledger(
                        stage,
                        partition,
                        prep,
                        request_id=reply.request_id or f"batch-{uuid.uuid4().hex}",
                        kind="batch",
                        status="ok",
                        tokens_in=reply.tokens_in,
                        tokens_out=reply.tokens_out,
                        latency_s=reply_latency(reply),
                        response_id=reply.response_id,
                        model=reply.model or prep.model,
                    )
                else:
                    reply, attempt = await self._send(stage, partition, prep, tail, attempt)
                    mode = "online"
            except BackendError as exc:
                attempt = getattr(exc, "attempt", attempt)
                if exc.kind == "empty" and self.settings.verbatim and prompt.schema is None:
                    # A reply without content (a refusal) came back: under evaluation it is an empty
                    # answer. Its tokens are already on the attempt's own call row.
                    reply = Reply("", 0, 0, "empty")
                else:
                    return self._result(
                        prep,
                        req,
                        ok=False,
                        error=str(exc),
                        error_class=f"Backend:{exc.kind or 'error'}",
                        attempts=attempt,
                        tokens_in=tin,
                        tokens_out=tout,
                        latency_s=time.perf_counter() - t_start,
                    )
            tin, tout = tin + reply.tokens_in, tout + reply.tokens_out
            try:
                if self.settings.verbatim and prompt.schema is None:
                    data = {"text": reply.text or ""}  # an empty or cut-off reply is the model's answer
                elif reply.finish_reason == "length":
                    raise ReplyError("reply truncated (finish_reason=length)", "Truncated")
                else:
                    data = parse_reply(reply.text, prompt.schema, self._validator(prompt))
            except ReplyError as exc:
                used = repairs.get(exc.error_class, 0)
                last = used >= self.repair_budget(stage, exc.error_class)
                self._record(
                    stage,
                    partition,
                    prep,
                    req,
                    model=prep.model,
                    attempt=attempt,
                    outcome="failed" if last else "invalid",
                    tokens_in=reply.tokens_in,
                    tokens_out=reply.tokens_out,
                    latency_s=reply_latency(reply),
                    error=str(exc),
                    error_class=exc.error_class,
                    mode=mode,
                )
                if last:
                    return self._result(
                        prep,
                        req,
                        ok=False,
                        text=reply.text,
                        error=f"{exc} (after repair)" if sum(repairs.values()) else str(exc),
                        error_class=exc.error_class,
                        attempts=attempt,
                        tokens_in=tin,
                        tokens_out=tout,
                        latency_s=time.perf_counter() - t_start,
                    )
                # Repair: show the model its latest reply and what was wrong with it (earlier failed
                # turns are dropped, so the context does not grow with each repair).
                repairs[exc.error_class] = used + 1
                tail = [
                    {"role": "assistant", "content": reply.text},
                    {
                        "role": "user",
                        "content": (
                            f"Your reply could not be used: {exc}. Reply again with only a JSON object that "
                            "satisfies the required schema, with no other text."
                        ),
                    },
                ]
                continue
            self._record(
                stage,
                partition,
                prep,
                req,
                model=prep.model,
                attempt=attempt,
                outcome="ok",
                tokens_in=reply.tokens_in,
                tokens_out=reply.tokens_out,
                latency_s=reply_latency(reply),
                mode=mode,
            )
            self.cache.put(
                prep.key,
                {
                    "data": data,
                    "text": reply.text,
                    "tokens_in": tin,
                    "tokens_out": tout,
                    "model": reply.model or prep.model,
                },
                model=prep.model,
                prompt_name=prompt.name,
            )
            return self._result(
                prep,
                req,
                ok=True,
                data=data,
                text=reply.text,
                attempts=attempt,
                tokens_in=tin,
                tokens_out=tout,
                latency_s=time.perf_counter() - t_start,
            )

    async def _attempt(
        self, stage: str, partition: str, prep: _Prepared, messages: list[dict[str, Any]], kind: str
    ) -> Reply:
        """One HTTP request: sent, awaited within the stage's deadlines, written to the ledger when it ends."""
        t = self.timeouts(stage)
        rid = f"req-{uuid.uuid4().hex}"
        t0 = time.perf_counter()
        self.status.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.status.in_flight)
        self._sent += 1
        try:
            async with asyncio.timeout(t["total"]):
                if prep.audio is not None:
                    reply = await self.backend.transcribe(
                        prep.model, prep.audio.data, prep.audio.filename, prep.params, timeouts=t, request_id=rid
                    )
                    # billed by duration: what the endpoint reports, else the audio's own length
                    reply.audio_s = reply.audio_s or prep.audio.duration_s
                else:
                    reply = await self.backend.complete(
                        prep.model,
                        messages,
                        prep.params,
                        self._response_format(prep.prompt),
                        prep.prompt.schema,
                        prep.key,
                        timeouts=t,
                        request_id=rid,
                    )
        except TimeoutError as exc:
            latency = time.perf_counter() - t0
            err = BackendError(
                f"timeout: no complete reply within {t['total']:g}s (total)", retryable=True, kind="timeout"
            )
            self._ledger(
                stage, partition, prep, request_id=rid, kind=kind, status="timeout", latency_s=latency, error=str(err)
            )
            self.status.timed_out += 1
            self.status.lost_s += latency
            raise err from exc
        except BackendError as exc:
            latency = time.perf_counter() - t0
            self._recent.append(exc.status == 429)
            status = f"http_{exc.status}" if exc.status else (exc.kind or "error")
            self._ledger(
                stage,
                partition,
                prep,
                request_id=rid,
                kind=kind,
                status=status,
                latency_s=latency,
                error=str(exc),
                tokens_in=getattr(exc, "tokens_in", 0),
                tokens_out=getattr(exc, "tokens_out", 0),
            )
            if exc.kind == "timeout":
                self.status.timed_out += 1
            self.status.lost_s += latency
            exc.latency = latency  # type: ignore[attr-defined]
            raise
        except asyncio.CancelledError:
            latency = time.perf_counter() - t0
            self._ledger(
                stage,
                partition,
                prep,
                request_id=rid,
                kind=kind,
                status="cancelled",
                latency_s=latency,
                error="cancelled (a hedge answered first, or the deadline passed)",
            )
            self.status.lost_s += latency
            raise
        finally:
            self.status.in_flight -= 1
        reply._latency = time.perf_counter() - t0  # type: ignore[attr-defined]
        self._recent.append(False)
        if self._answered_loop is not asyncio.get_running_loop():
            self._answered_loop, self._answered_at = asyncio.get_running_loop(), asyncio.get_running_loop().time()
        self._ledger(
            stage,
            partition,
            prep,
            request_id=rid,
            kind=kind,
            status="ok",
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            latency_s=reply._latency,
            response_id=reply.response_id,  # type: ignore[attr-defined]
            model=prep.model,
            audio_s=reply.audio_s,
        )
        self._latencies(prep.model).append(reply._latency)  # type: ignore[attr-defined]
        return reply

    async def _hedged(
        self,
        stage: str,
        partition: str,
        prep: _Prepared,
        messages: list[dict[str, Any]],
        sem: Slots,
        est: int,
    ) -> tuple[Reply, str | None]:
        """The primary attempt, plus a hedge copy once it is slower than the adaptive deadline.

        Returns the first successful reply and, when the primary was abandoned, why (for the call log).
        With hedging off, a stalled primary is cancelled and reported as a timeout (retried at once)."""
        loop = asyncio.get_running_loop()
        # The caller holds a slot for the primary; its task gives it back when the attempt ends
        # (done callback: it also runs for a task cancelled before it started).
        primary = asyncio.ensure_future(self._attempt(stage, partition, prep, messages, "call"))
        primary.add_done_callback(lambda _t: sem.release())
        warm = getattr(self.backend, "warm", None)
        if warm is not None and self._warm_loop is not loop:
            warm()  # before the primary's first step: the task has not run yet
            self._warm_loop = loop
        t0 = loop.time()
        # The deadline is re-read while waiting: it tightens as latency samples arrive. Until this
        # loop has received a reply, a slow request may be the client's first-use cost (imports,
        # TLS, connection set-up), not a stalled endpoint, so time counts from the first reply.
        while True:
            after = self.hedge_deadline(stage, prep.model)
            if after is None:
                return await primary, None
            warm_at = self._answered_at if self._answered_loop is loop else None
            remaining = after - (loop.time() - max(t0, warm_at)) if warm_at is not None else after
            if warm_at is not None and remaining <= 0:
                break
            done, _ = await asyncio.wait({primary}, timeout=min(max(remaining, 0.01), 0.5))
            if done:
                return primary.result(), None
        allowed = self.settings.stage(stage, "hedge") and self.status.hedged < max(
            1.0, self.settings.hedge_max_share * self._sent
        )
        if not allowed:
            primary.cancel()
            await asyncio.gather(primary, return_exceptions=True)
            self.status.timed_out += 1
            raise BackendError(
                f"timeout: no reply within the adaptive deadline {after:.2f}s", retryable=True, kind="timeout"
            )

        async def hedge() -> Reply:
            # The copy takes its own slot: the endpoint never sees more than max_concurrency. No
            # slot is held while a copy waits for one (each attempt holds only its own), so copies
            # waiting on a full budget cannot deadlock against the requests that hold it. It waits
            # ahead of new requests: a stall mid-stage is hedged at the next free slot.
            await sem.acquire(urgent=True)
            try:
                await self.limiter.acquire(est)
                self.status.hedged += 1
                return await self._attempt(stage, partition, prep, messages, "hedge")
            finally:
                sem.release()

        # Copies race; each time the newest one is itself past the deadline another is sent (a
        # hedge can hang too), keeping at most ``MAX_COPIES`` in flight (the oldest is dropped).
        copies = [primary]
        copies.append(asyncio.ensure_future(hedge()))
        started = {primary: t0, copies[1]: loop.time()}
        next_at = loop.time() + (self.hedge_deadline(stage, prep.model) or after)
        errors: list[BaseException] = []
        try:
            while copies:
                done, _ = await asyncio.wait(
                    copies, timeout=max(next_at - loop.time(), 0.01), return_when=asyncio.FIRST_COMPLETED
                )
                for task in done:
                    copies.remove(task)
                    exc = task.exception()
                    if exc is None:
                        if task is not primary:
                            self.status.hedge_wins += 1
                        note = (
                            f"timeout: slower than the adaptive deadline {after:.2f}s, hedged; "
                            f"{'a hedge' if task is not primary else 'the original'} answered first"
                        )
                        return task.result(), note
                    errors.append(exc)
                    stalled = all(loop.time() - started[c] >= after for c in copies if c is not task)
                    if isinstance(exc, BackendError) and exc.retryable and stalled:
                        # a copy failed fast (429, 5xx) while the others are stalled: replace it once
                        # the endpoint's retry-after (or a short pause) has passed
                        next_at = min(next_at, loop.time() + max(0.05, exc.retry_after or 0.1))
                if not copies:
                    break
                if loop.time() >= next_at and self.status.hedged < max(1.0, self.settings.hedge_max_share * self._sent):
                    if len(copies) >= MAX_COPIES:
                        oldest = copies.pop(0)
                        oldest.cancel()
                        await asyncio.gather(oldest, return_exceptions=True)
                    copies.append(asyncio.ensure_future(hedge()))
                    started[copies[-1]] = loop.time()
                    next_at = loop.time() + (self.hedge_deadline(stage, prep.model) or after)
                elif loop.time() >= next_at:
                    next_at = loop.time() + (self.hedge_deadline(stage, prep.model) or after)
            raise errors[0]
        finally:
            for task in copies:
                task.cancel()
            if copies:
                await asyncio.gather(*copies, return_exceptions=True)

    async def _send(
        self, stage: str, partition: str, prep: _Prepared, tail: list[dict[str, Any]], attempt: int
    ) -> tuple[Reply, int]:
        """One reply, retrying transient errors within their budgets; raises the last BackendError."""
        s = self.settings
        used: dict[str, int] = {}
        sem = self._semaphore()

        def note_row(outcome: str, latency: float, error: str, error_class: str, **tokens: int) -> None:
            """This request's call-log row for an attempt that gave no usable reply."""
            self._record(
                stage,
                partition,
                prep,
                prep.req,
                model=prep.model,
                attempt=attempt,
                outcome=outcome,
                latency_s=latency,
                error=error,
                error_class=error_class,
                **tokens,
            )

        while True:
            messages = self._wire_messages(prep, tail)
            est = count_message_tokens(messages) + int(prep.params.get("max_tokens") or 0)
            t0 = time.perf_counter()
            # One slot per HTTP attempt, not per request: the primary's task gives it back when its
            # attempt ends (see _hedged), so no request holds a slot while it waits on a hedge's.
            await sem.acquire()
            try:
                # Inside the slot, so a pause announced by a reply in flight stops the next send.
                await self.limiter.acquire(est)
            except BaseException:
                sem.release()
                raise
            attempt += 1
            sent_mode = self._mode
            try:
                reply, note = await self._hedged(stage, partition, prep, messages, sem, est)
                if note:  # the time the stalled copy cost, on the call log
                    note_row("retry", time.perf_counter() - t0 - reply_latency(reply), note, "Backend:timeout")
                    attempt += 1
                self.limiter.observe(reply.headers)
                return reply, attempt
            except BackendError as exc:
                err = exc
            latency = time.perf_counter() - t0
            self.limiter.observe(err.headers)
            kind = err.kind or "error"
            if err.kind == "response_format" and sent_mode == "json_schema" and s.structured_output == "auto":
                # The endpoint has no json_schema response format: JSON mode + our own validation.
                self._mode = "json_object"
                note_row(
                    "retry", latency, f"json_schema unsupported, using json_object: {err}", "Backend:response_format"
                )
                continue
            if not err.retryable or used.get(kind, 0) >= self.retry_budget(stage, kind):
                note_row(
                    "failed",
                    latency,
                    str(err),
                    f"Backend:{kind}",
                    tokens_in=getattr(err, "tokens_in", 0),
                    tokens_out=getattr(err, "tokens_out", 0),
                )
                err.attempt = attempt  # type: ignore[attr-defined]
                raise err
            used[kind] = used.get(kind, 0) + 1
            note_row("retry", latency, str(err), f"Backend:{kind}")
            if kind == "timeout":
                continue  # the deadline already cost the time: retry at once
            n = sum(used.values())
            backoff = min(s.backoff_max_s, s.backoff_base_s * 2 ** (n - 1))
            delay = backoff / 2 + random.uniform(0, backoff / 2)  # "equal jitter"
            if err.retry_after is not None:
                # The endpoint said when: this request waits that long (plus a little jitter), and so
                # does everyone when throttling is systematic (a quarter of recent replies are 429s;
                # an exhausted quota announced in x-ratelimit headers pauses everyone via observe()).
                delay = err.retry_after + random.uniform(0, min(0.1 * err.retry_after + 0.01, 1.0))
                if self._throttled_share() >= THROTTLE_PAUSE_SHARE:
                    self.limiter.pause(err.retry_after)
                self.status.waiting_retry_after += 1
                try:
                    await asyncio.sleep(delay)
                finally:
                    self.status.waiting_retry_after -= 1
            else:
                self.status.backing_off += 1
                try:
                    await asyncio.sleep(delay)
                finally:
                    self.status.backing_off -= 1


def _shutdown(state: dict[str, Any]) -> None:
    """Finalizer: stop the loop thread (closing the client) and the check pool."""
    loop = state.get("_loop")
    if loop is not None:
        loop.stop(state["backend"])
    pool = state.get("check_pool")
    if pool is not None:
        pool.shutdown(wait=False)


def reply_latency(reply: Reply) -> float:
    return float(getattr(reply, "_latency", 0.0))
