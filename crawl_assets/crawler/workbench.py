"""The two-level frontier of one fetch batch (Mercator, as in BUbiNG's Workbench).

Invariant: a host is in exactly one of three places: waiting in the ready heap (its back
queue is non-empty and nobody is fetching from it), checked out by exactly one worker, or
idle (its back queue is empty). A worker gets work only by `acquire()`, which pops the host
with the earliest next-allowed time and waits until that time; it gives the host back with
`release(host, delay)`, which sets next_allowed = now + delay. So one request in flight per
host and the delay between requests hold by construction, not by checks.

Front queues order the batch by priority: when a back queue needs refilling, a front queue
is chosen by weighted random selection, so high priorities are fetched far more often while
low ones still move (no starvation). Back queues are bounded in number; URLs wait in the
front queues until their host gets a back queue.
"""

from __future__ import annotations

import asyncio
import heapq
import random
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from .settings import DEFAULT_PRIORITY_WEIGHTS  # level 1 (highest) .. 5, written once there
from .urls import host_of


@dataclass(frozen=True)
class FetchTask:
    url: str  # normalised
    host: str
    depth: int = 0
    priority: int = 3  # 1 = most urgent .. len(weights)
    etag: str | None = None  # from the previous fetch, for a conditional GET
    last_modified: str | None = None
    last_captured_at: datetime | None = None  # the latest 200, which a 304 revisit refers to
    attempt: int = 1
    redirect_chain: tuple[str, ...] = ()  # the URLs that redirected here, oldest first

    @classmethod
    def for_url(cls, url: str, **fields) -> "FetchTask":
        return cls(url=url, host=host_of(url), **fields)


@dataclass
class HostState:
    """Politeness state of one host for the whole batch (kept when its back queue empties)."""

    host: str
    back_queue: deque[FetchTask] = field(default_factory=deque)
    next_allowed: float = 0.0
    checked_out: bool = False
    in_heap: bool = False


class Workbench:
    def __init__(self, weights: Sequence[float] = DEFAULT_PRIORITY_WEIGHTS,
                 max_back_queues: int = 1024, rng: random.Random | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.weights = tuple(weights)
        self.front_queues: list[deque[FetchTask]] = [deque() for _ in self.weights]
        self.hosts: dict[str, HostState] = {}
        self.max_back_queues = max_back_queues
        self._ready: list[tuple[float, int, str]] = []  # (next_allowed, tie-break, host)
        self._sequence = 0
        self._active_back_queues = 0  # hosts with a non-empty back queue or checked out
        self._rng = rng or random.Random(0)
        self._clock = clock
        self._changed = asyncio.Event()
        self._closed = False

    # -- adding work ---------------------------------------------------------------------

    def add(self, task: FetchTask) -> None:
        level = min(max(task.priority, 1), len(self.weights)) - 1
        state = self.hosts.get(task.host)
        if state is not None and (state.back_queue or state.checked_out):
            state.back_queue.append(task)  # the host already has a back queue: join it
        else:
            self.front_queues[level].append(task)
        self._refill()

    def _pick_front_queue(self) -> deque[FetchTask] | None:
        candidates = [(q, w) for q, w in zip(self.front_queues, self.weights) if q]
        if not candidates:
            return None
        queues, weights = zip(*candidates)
        return self._rng.choices(queues, weights=weights)[0]

    def _refill(self) -> None:
        """Move URLs from the front queues into back queues while back queues are free."""
        while self._active_back_queues < self.max_back_queues:
            queue = self._pick_front_queue()
            if queue is None:
                return
            task = queue.popleft()
            state = self.hosts.setdefault(task.host, HostState(task.host))
            was_idle = not state.back_queue and not state.checked_out
            state.back_queue.append(task)
            if was_idle:
                self._active_back_queues += 1
                self._schedule(state)

    def _schedule(self, state: HostState) -> None:
        if state.in_heap or state.checked_out or not state.back_queue:
            return
        self._sequence += 1
        heapq.heappush(self._ready, (state.next_allowed, self._sequence, state.host))
        state.in_heap = True
        self._changed.set()

    # -- the worker protocol ----------------------------------------------------------------

    def pending(self) -> int:
        return sum(len(q) for q in self.front_queues) + sum(len(s.back_queue) for s in self.hosts.values())

    def busy(self) -> bool:
        """Work remains: queued URLs, or a host checked out (which may add links)."""
        return bool(self._ready) or any(self.front_queues) or any(
            s.checked_out for s in self.hosts.values())

    async def acquire(self) -> tuple[HostState, FetchTask] | None:
        """The host whose turn comes first, and its next URL; None when the batch is done."""
        while True:
            if self._ready:
                due, _, host = self._ready[0]
                wait = due - self._clock()
                if wait <= 0:
                    heapq.heappop(self._ready)
                    state = self.hosts[host]
                    state.in_heap = False
                    state.checked_out = True
                    return state, state.back_queue.popleft()
            elif not self.busy() or self._closed:
                self._changed.set()  # wake the other idle workers so they end too
                return None
            else:
                wait = None
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), wait)
            except asyncio.TimeoutError:
                pass

    def release(self, state: HostState, delay_s: float) -> None:
        """The worker is done with this host: it may be fetched again after delay_s."""
        state.checked_out = False
        state.next_allowed = self._clock() + delay_s
        if state.back_queue:
            self._schedule(state)
        else:
            self._active_back_queues -= 1
            self._refill()
        self._changed.set()

    def drop_host(self, state: HostState) -> list[FetchTask]:
        """Empty a checked-out host's back queue (e.g. robots disallow-all); returns the tasks."""
        dropped = list(state.back_queue)
        state.back_queue.clear()
        return dropped

    def close(self) -> None:
        """Stop handing out work (time limit); queued URLs stay unfetched."""
        self._closed = True
        self._ready.clear()
        self._changed.set()
