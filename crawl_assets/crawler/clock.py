"""The time the fetch engine waits by, injectable so tests can drive it.

The workbench only ever asks two things of a clock: what time it is, and "wake me when this
event is set or `timeout` seconds have passed". MonotonicClock answers with the real clock;
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

    async def wait(self, event: asyncio.Event, timeout: float | None) -> None:
        """Return when `event` is set or after `timeout` seconds (None: no limit)."""
        if timeout is None:
            await event.wait()
            return
        try:
            async with asyncio.timeout(timeout):
                await event.wait()
        except TimeoutError:
            pass


class ManualClock:
    """A clock that stands still until advance() is called (for tests)."""

    def __init__(self, start: float = 0.0):
        self._now = start
        self._sleepers: list[tuple[float, asyncio.Event]] = []

    def now(self) -> float:
        return self._now

    async def wait(self, event: asyncio.Event, timeout: float | None) -> None:
        if timeout is not None:
            self._sleepers.append((self._now + timeout, event))
        await event.wait()

    def advance(self, seconds: float) -> None:
        """Move time forward; wakes every waiter whose timeout has now passed."""
        if seconds < 0:
            raise ValueError(f"a clock cannot go back ({seconds} s)")
        self._now += seconds
        due = [event for deadline, event in self._sleepers if deadline <= self._now]
        self._sleepers = [(d, e) for d, e in self._sleepers if d > self._now]
        for event in due:
            event.set()
