"""The engine's concurrency budget (``forge.llm.limits.Slots``): urgent waiters first, no slot lost
or made up when a waiter is cancelled."""

from __future__ import annotations

import asyncio

from forge.llm.limits import Slots


def test_urgent_waiters_are_served_before_earlier_normal_ones():
    async def main() -> list[str]:
        slots, order = Slots(1), []
        await slots.acquire()

        async def take(name: str, urgent: bool) -> None:
            await slots.acquire(urgent=urgent)
            order.append(name)
            await asyncio.sleep(0)
            slots.release()

        tasks = [asyncio.create_task(take(n, n.startswith("u"))) for n in ("n1", "n2", "u1", "n3", "u2")]
        await asyncio.sleep(0.01)
        slots.release()
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(main()) == ["u1", "u2", "n1", "n2", "n3"]


def test_a_cancelled_waiter_neither_keeps_nor_doubles_a_slot():
    async def main() -> tuple[int, int]:
        slots = Slots(2)
        await slots.acquire()
        await slots.acquire()
        waiting = asyncio.create_task(slots.acquire())
        handed = asyncio.create_task(slots.acquire(urgent=True))
        await asyncio.sleep(0)
        waiting.cancel()  # cancelled while queued
        slots.release()  # goes to ``handed``...
        handed.cancel()  # ...which is cancelled before it runs: the slot must go back
        await asyncio.gather(waiting, handed, return_exceptions=True)
        # exactly one slot is free again: one acquire passes at once, the next one waits
        await asyncio.wait_for(slots.acquire(), 1)
        late = asyncio.create_task(slots.acquire())
        await asyncio.sleep(0.01)
        blocked = int(not late.done())
        slots.release()
        await asyncio.wait_for(late, 1)
        return blocked, slots._free

    assert asyncio.run(main()) == (1, 0)
