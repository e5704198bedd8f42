"""Requests- and tokens-per-minute limits, tightened by the endpoint's own headers.

A sliding 60 s window of (time, tokens) admits a request when both budgets allow it.
``observe`` reads ``x-ratelimit-*`` headers: the endpoint's limits replace configured
ones when lower, and when remaining requests or tokens reach zero every caller waits
until the announced reset. ``pause`` (after a 429's retry-after) stops all callers, not
just the one that got the 429, so a burst does not keep hammering a throttled endpoint.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque

_DUR = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_SCALE = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: str | None) -> float | None:
    """``"1s"``, ``"6m0s"``, ``"20ms"``, ``"0.5"`` → seconds."""
    if value is None:
        return None
    value = str(value).strip()
    try:
        return float(value)
    except ValueError:
        pass
    parts = _DUR.findall(value)
    if not parts:
        return None
    return sum(float(n) * _SCALE[u] for n, u in parts)


class RateLimiter:
    def __init__(self, rpm: int | None = None, tpm: int | None = None, window_s: float = 60.0):
        self.rpm, self.tpm, self.window_s = rpm, tpm, window_s
        self._window: deque[tuple[float, int]] = deque()
        self._tokens = 0
        self.blocked_until = 0.0
        self.waited_s = 0.0

    def _trim(self, now: float) -> None:
        while self._window and self._window[0][0] <= now - self.window_s:
            self._tokens -= self._window.popleft()[1]

    def _wait_needed(self, now: float, tokens: int) -> float:
        self._trim(now)
        wait = max(0.0, self.blocked_until - now)
        if self._window:
            oldest = self._window[0][0] + self.window_s - now
            if self.rpm and len(self._window) >= self.rpm:
                wait = max(wait, oldest)
            if self.tpm and self._tokens + tokens > self.tpm:
                wait = max(wait, oldest)
        return wait

    async def acquire(self, tokens: int = 0) -> None:
        while True:
            now = time.monotonic()
            wait = self._wait_needed(now, tokens)
            if wait <= 0:
                self._window.append((now, tokens))
                self._tokens += tokens
                return
            self.waited_s += wait
            await asyncio.sleep(wait)

    def pause(self, seconds: float) -> None:
        self.blocked_until = max(self.blocked_until, time.monotonic() + max(0.0, seconds))

    def observe(self, headers: dict[str, str]) -> None:
        if not headers:
            return
        for kind in ("requests", "tokens"):
            limit = headers.get(f"x-ratelimit-limit-{kind}")
            if limit is not None:
                try:
                    lim = int(float(limit))
                except ValueError:
                    lim = 0
                if lim > 0:
                    if kind == "requests" and (self.rpm is None or lim < self.rpm):
                        self.rpm = lim
                    if kind == "tokens" and (self.tpm is None or lim < self.tpm):
                        self.tpm = lim
            remaining = headers.get(f"x-ratelimit-remaining-{kind}")
            if remaining is not None:
                try:
                    left = int(float(remaining))
                except ValueError:
                    continue
                if left <= 0:
                    reset = parse_duration(headers.get(f"x-ratelimit-reset-{kind}"))
                    self.pause(reset if reset is not None else 1.0)


class Slots:
    """The concurrency budget: a counting semaphore whose urgent waiters are served first.

    A hedge exists because a request has stalled mid-stage; behind a FIFO queue of new requests it
    would go out only when the queue drains (the stall long resolved or timed out, more hedges
    queued meanwhile). A freed slot is handed straight to the next waiter (urgent ones first), so
    a new arrival cannot take it in between."""

    def __init__(self, n: int) -> None:
        self._free = max(1, n)
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._normal: deque[asyncio.Future[None]] = deque()

    async def acquire(self, urgent: bool = False) -> None:
        if self._free > 0 and not self._urgent and not self._normal:
            self._free -= 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._urgent if urgent else self._normal
        queue.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # handed a slot, then cancelled: pass it on
                self.release()
            raise
        finally:
            if fut in queue:
                queue.remove(fut)

    def release(self) -> None:
        for queue in (self._urgent, self._normal):
            while queue:
                fut = queue.popleft()
                if not fut.done():
                    fut.set_result(None)
                    return
        self._free += 1

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()
