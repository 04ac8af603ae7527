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


# -- time limits that measure the server, not our own stalls ------------------------------
# While the event loop runs one long callback (a lazy import, a large page parsed, a file
# loaded), a server's answer waits in the socket; when the loop runs again, asyncio handles
# the bytes that came in and the timers that are due in the same round, and a due time limit
# cancels the request before the task that would read the answer has run. So a limit's
# deadline moves on by the time the loop stalled while it was running.

STALL_BEAT_S = 0.05  # how often LoopStalls looks at the loop
STALL_TOLERANCE_S = 0.05  # lateness below this is ordinary work between callbacks, not a stall


class LoopStalls:
    """The time the event loop could not run its callbacks when they were due: a heartbeat
    every STALL_BEAT_S; a beat late by more than STALL_TOLERANCE_S adds its lateness.
    stalled_s() counts a stall still in progress too (asked by a callback that runs in the
    same round as the late heartbeat, before it)."""

    def __init__(self):
        self.total_s = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._due = 0.0
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._next(self._loop.time())

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = self._loop = None

    def _next(self, now: float) -> None:
        self._due = now + STALL_BEAT_S
        self._handle = self._loop.call_at(self._due, self._beat)

    def _beat(self) -> None:
        now = self._loop.time()
        late = now - self._due
        if late > STALL_TOLERANCE_S:
            self.total_s += late
        self._next(now)

    def stalled_s(self) -> float:
        if self._loop is None:
            return self.total_s
        late = self._loop.time() - self._due
        return self.total_s + (late if late > STALL_TOLERANCE_S else 0.0)


NO_STALLS = LoopStalls()  # never started: a limit alone then counts only its own lateness


class ServerTimeLimit:
    """`async with ServerTimeLimit(seconds, stalls):` is asyncio.timeout(seconds) (TimeoutError
    when it expires) whose deadline moves on by the loop's stalls since it began (`stalls`,
    an engine's LoopStalls), and at least by how late its own timer ran."""

    __slots__ = ("_seconds", "_stalls", "_timeout", "_loop", "_start", "_from", "_due", "_own_late", "_handle")

    def __init__(self, seconds: float, stalls: LoopStalls = NO_STALLS):
        self._seconds = seconds
        self._stalls = stalls

    async def __aenter__(self) -> "ServerTimeLimit":
        self._timeout = asyncio.timeout(None)
        await self._timeout.__aenter__()
        self._loop = asyncio.get_running_loop()
        self._start = self._due = self._loop.time()
        self._due += self._seconds
        self._from = self._stalls.stalled_s()
        self._own_late = 0.0
        self._handle = self._loop.call_at(self._due, self._check)
        return self

    async def __aexit__(self, exc_type, exc, tb) -> bool | None:
        self._handle.cancel()
        return await self._timeout.__aexit__(exc_type, exc, tb)

    def _check(self) -> None:
        now = self._loop.time()
        late = now - self._due
        if late > STALL_TOLERANCE_S:
            self._own_late += late
        credit = max(self._stalls.stalled_s() - self._from, self._own_late)
        due = self._start + self._seconds + credit
        if due > now + 0.001:  # the loop stalled: the server gets back the time it lost
            self._due = due
            self._handle = self._loop.call_at(due, self._check)
        else:
            self._timeout.reschedule(now)  # expires: the waiting task is cancelled
