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

This module is the public API; the work is done in rooms of its own: ``transport`` (attempts,
deadlines, hedging, retries), ``parsing`` (preparation, validation, repair), ``accounting``
(call log, ledger, costs), ``audio``, ``progress`` (progress lines, the loop thread) and
``settings``. ``batch`` sees the engine only through its seam (``lookup``, ``chat_body``,
``accept``, ``fail_call``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

import pandas as pd

from forge.llm.accounting import Accounting, CallRecord
from forge.llm.audio import AudioMixin
from forge.llm.backends import Backend, Reply
from forge.llm.batch import arun_batch
from forge.llm.cache import LLMCache
from forge.llm.images import ImageEncoder
from forge.llm.ledger import SpendLedger, ledger_beside
from forge.llm.limits import RateLimiter, Slots
from forge.llm.parsing import ParsingMixin
from forge.llm.progress import _check_ctx, _LoopThread, _Progress, _Status
from forge.llm.settings import EngineSettings
from forge.llm.transport import TransportMixin
from forge.llm.types import LLMRequest, LLMResult, Prepared

T = TypeVar("T")


class LLMEngine(TransportMixin, ParsingMixin, AudioMixin):
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
        self.limiter = RateLimiter(self.settings.rpm, self.settings.tpm)
        self.images = ImageEncoder(self.settings.image_max_side, self.settings.image_quality)
        # Engines built without a resource (evals) still record spend: the ledger beside their cache.
        self.ledger = ledger if ledger is not None else SpendLedger(ledger_beside(cache.path))
        self.endpoint = self.settings.provider or str(getattr(backend, "endpoint", "") or backend.name).rstrip("/")
        self.accounts = Accounting(backend.name, self.endpoint, prices or {}, self.ledger, self.settings)
        self.prices, self.session_id = self.accounts.prices, self.accounts.session_id
        self.status = _Status()
        self._mode = "json_object" if self.settings.structured_output == "json_object" else "json_schema"
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
        return str(self.settings.stage(stage, "model"))

    def calls_frame(self, stage: str | None = None, partition: str | None = None) -> pd.DataFrame:
        """This engine's ``llm_calls`` rows (of one stage / partition)."""
        return self.accounts.frame(stage, partition)

    def stats(self) -> dict[str, Any]:
        return self.accounts.stats(self.status)

    def reset_calls(self) -> None:
        self.accounts.reset()

    def run(self, stage: str, partition: str, requests: list[LLMRequest]) -> list[LLMResult]:
        """Synchronous entry point (asset bodies are sync): one result per request, in order.

        Thread-safe: concurrent calls (partitions in threads, refine checks) share the engine's
        loop, client, concurrency budget and rate limits."""
        if self.uses_batch_api(stage):
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
            await _Progress.stop(ticker)

    # -- the seam for other send paths (forge/llm/batch.py) -----------------------------------
    # lookup(stage, partition, req, mode) (ParsingMixin): the prepared request, or its result when
    # nothing needs sending (a cache hit, a request that cannot be prepared).

    def chat_body(self, prep: Prepared) -> dict[str, Any]:
        """The ``/v1/chat/completions`` body of a prepared request, as the online path sends it."""
        body: dict[str, Any] = {"model": prep.model, "messages": self._wire_messages(prep, []), **prep.params}
        rf = self._response_format(prep.prompt)
        if rf is not None:
            body["response_format"] = rf
        return body

    async def accept(self, stage: str, partition: str, prep: Prepared, reply: Reply, mode: str) -> LLMResult:
        """A reply that came another way, handled as an online one: validated, repaired online
        within budget (never for the model under evaluation), cached."""
        return await self._call_and_parse(stage, partition, prep, first_reply=reply, mode=mode)

    def fail_call(
        self, stage: str, partition: str, prep: Prepared, reason: str, error_class: str, attempts: int, mode: str
    ) -> LLMResult:
        """A request that got no answer: its failed ``llm_calls`` row and result."""
        self.accounts.record(
            CallRecord.of(stage, partition, prep, attempts, "failed", error=reason, error_class=error_class, mode=mode)
        )
        return self.accounts.result(prep, prep.req, ok=False, error=reason, error_class=error_class, attempts=attempts)

    async def acall(self, stage: str, partition: str, req: LLMRequest) -> LLMResult:
        """One request end to end (cache, send, validate, repair); must run on the engine's loop
        when mixed with ``run`` (the refine loop does)."""
        return await self._process(stage, partition, req)


def _shutdown(state: dict[str, Any]) -> None:
    """Finalizer: stop the loop thread (closing the client) and the check pool."""
    loop = state.get("_loop")
    if loop is not None:
        loop.stop(state["backend"])
    pool = state.get("check_pool")
    if pool is not None:
        pool.shutdown(wait=False)
