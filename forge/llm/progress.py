"""Progress lines, the engine's status gauges, its event-loop thread and the check context."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

_log = logging.getLogger("subtext_forge.llm")
_log.setLevel(logging.INFO)  # progress lines; dagster.yaml hands this logger to Dagster


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

    @staticmethod
    async def stop(ticker: asyncio.Future[None] | None) -> None:
        """Cancels the ticker and waits for it, so its name is let go (``close``) before the run
        returns, not at some later turn of the loop."""
        if ticker is not None:
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)

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
