"""The time the fetch engine waits by, injectable so tests can drive it.

The workbench only ever asks two things of a clock: what time it is, and "wake me when this
future is done or `timeout` seconds have passed" (a bare future, not an asyncio.Event under
asyncio.timeout: an idle worker sleeps several times a page, and those layers cost more than
the sleep). MonotonicClock answers with the real clock;
ManualClock moves only when a test calls advance(), so a test can say exactly when a host
becomes due without sleeping.
"""

from __future__ import annotations

import asyncio
import time


class MonotonicClock:
    """Real time (time.monotonic)."""

    def now(self) -> float:
        return time.monotonic()

    async def wait(self, waiter: asyncio.Future, timeout: float | None) -> None:
        """Return when `waiter` is done or after `timeout` seconds (None: no limit)."""
        if timeout is None:
            await waiter
            return
        alarm = waiter.get_loop().call_later(timeout, wake, waiter)
        try:
            await waiter
        finally:
            alarm.cancel()


def wake(waiter: asyncio.Future) -> None:
    """Wake whoever waits on `waiter` (once: a second wake-up does nothing)."""
    if not waiter.done():
        waiter.set_result(None)


class ManualClock:
    """A clock that stands still until advance() is called (for tests)."""

    def __init__(self, start: float = 0.0):
        self._now = start
        self._sleepers: list[tuple[float, asyncio.Future]] = []

    def now(self) -> float:
        return self._now

    async def wait(self, waiter: asyncio.Future, timeout: float | None) -> None:
        if timeout is not None:
            self._sleepers.append((self._now + timeout, waiter))
        await waiter

    def advance(self, seconds: float) -> None:
        """Move time forward; wakes every waiter whose timeout has now passed."""
        if seconds < 0:
            raise ValueError(f"a clock cannot go back ({seconds} s)")
        self._now += seconds
        due = [waiter for deadline, waiter in self._sleepers if deadline <= self._now]
        self._sleepers = [(d, w) for d, w in self._sleepers if d > self._now]
        for waiter in due:
            wake(waiter)
