"""Transport: HTTP attempts, deadlines, hedging, retries and backoff, the shared concurrency budget."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import deque
from typing import Any

from forge.llm.accounting import CallRecord, reply_latency
from forge.llm.backends import BackendError, Reply
from forge.llm.limits import Slots
from forge.llm.tokens import count_message_tokens
from forge.llm.types import Prepared

THROTTLE_PAUSE_SHARE = 0.25  # share of 429s among recent replies above which a 429 pauses every caller
MAX_COPIES = 3  # copies of one request in flight at once (original + hedges)


class TransportMixin:
    """Sending one request: slots, rate limits, attempts, hedges, retries."""

    # -- budgets and deadlines -----------------------------------------------------------
    def retry_budget(self, stage: str, kind: str) -> int:
        budgets = self.settings.stage(stage, "retry_budgets")
        return int(budgets.get(kind, self.settings.max_retries))

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

    async def _attempt(
        self, stage: str, partition: str, prep: Prepared, messages: list[dict[str, Any]], kind: str
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
                        language=prep.prompt.language,
                    )
        except TimeoutError as exc:
            latency = time.perf_counter() - t0
            err = BackendError(
                f"timeout: no complete reply within {t['total']:g}s (total)", retryable=True, kind="timeout"
            )
            self.accounts.ledger_row(
                stage, partition, prep, request_id=rid, kind=kind, status="timeout", latency_s=latency, error=str(err)
            )
            self.status.timed_out += 1
            self.status.lost_s += latency
            raise err from exc
        except BackendError as exc:
            latency = time.perf_counter() - t0
            self._recent.append(exc.status == 429)
            status = f"http_{exc.status}" if exc.status else (exc.kind or "error")
            self.accounts.ledger_row(
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
            self.accounts.ledger_row(
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
        self.accounts.ledger_row(
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
        prep: Prepared,
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
        self, stage: str, partition: str, prep: Prepared, tail: list[dict[str, Any]], attempt: int
    ) -> tuple[Reply, int]:
        """One reply, retrying transient errors within their budgets; raises the last BackendError."""
        s = self.settings
        used: dict[str, int] = {}
        sem = self._semaphore()

        def note_row(outcome: str, latency: float, error: str, error_class: str, **tokens: int) -> None:
            """This request's call-log row for an attempt that gave no usable reply."""
            self.accounts.record(
                CallRecord.of(
                    stage,
                    partition,
                    prep,
                    attempt,
                    outcome,
                    latency_s=latency,
                    error=error,
                    error_class=error_class,
                    **tokens,
                )
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
