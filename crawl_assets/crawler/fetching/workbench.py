"""The workbench of one fetch batch: its in-memory two-level frontier (Mercator, as in
BUbiNG's Workbench), holding one VisitState per host (visit_state.py).

Invariant: a host with queued work is in exactly one of four places:
  - ready: in the heap of (next_allowed, host), nobody holding it;
  - checked out: held by exactly one worker, not in the heap;
  - parked: not in the heap and held by nobody, because its next request waits for one made
    on its behalf at another host (its robots.txt redirected there);
  - idle: its back queue is empty (then it is neither in the heap nor parked).
A worker gets a host only from acquire(), which pops the host with the earliest
next_allowed once that time has come, and gives it back with release(state, delay), which
sets next_allowed = now + delay. So one request in flight per host and the delay between
its requests hold by construction; acquire, release, park and drop_host check the
invariant on every call and raise InvariantError when a caller breaks it.

Front queues order the batch by priority: when a back queue needs refilling, a front queue
is chosen by weighted random selection, so high priorities are fetched far more often while
low ones still move (no starvation). Back queues are bounded in number; URLs wait in the
front queues until their host gets a back queue.
"""

from __future__ import annotations

import asyncio
import heapq
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from ..settings import DEFAULT_PRIORITY_WEIGHTS  # level 1 (highest) .. 5, written once there
from ..url_policy.urls import host_of
from .clock import MonotonicClock, wake
from .visit_state import VisitState


class InvariantError(AssertionError):
    """A caller broke the workbench's invariant (e.g. released a host it did not hold).
    Raised whatever Python's -O says: a silent break would fetch a host twice at once."""


_WOKEN = object()  # what an idle worker finds in place of its entry once _notify woke it


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantError(message)


@dataclass(frozen=True)
class FetchTask:
    url: str  # normalised
    host: str
    depth: int = 0
    priority: int = 3  # 1 = most urgent .. len(weights)
    etag: str | None = None  # from the previous fetch, for a conditional GET
    last_modified: str | None = None
    last_captured_at: datetime | None = None  # the latest 200, which a 304 revisit refers to
    last_payload_digest: str | None = None  # that 200's payload digest (finds the record holding it)
    attempt: int = 1
    redirect_chain: tuple[str, ...] = ()  # the URLs that redirected here, oldest first
    # Set on a robots.txt request: the origin whose robots.txt this is (possibly another
    # host's, when that robots.txt redirected here). Such a request is never a page.
    robots_for: str | None = None

    @classmethod
    def for_url(cls, url: str, **fields) -> "FetchTask":
        return cls(url=url, host=host_of(url), **fields)


class Workbench:
    def __init__(self, weights: Sequence[float] = DEFAULT_PRIORITY_WEIGHTS,
                 max_back_queues: int = 1024, rng: random.Random | None = None,
                 clock=None, new_host: Callable[[str], VisitState] = VisitState):
        """clock: now() and wait(event, timeout) (clock.py); new_host(host): a fresh VisitState."""
        self.weights = tuple(weights)
        self.front_queues: list[deque[FetchTask]] = [deque() for _ in self.weights]
        self.hosts: dict[str, VisitState] = {}
        self.max_back_queues = max_back_queues
        self._new_host = new_host
        self._ready: list[tuple[float, int, str]] = []  # (next_allowed, tie-break, host)
        self._sequence = 0
        self._active_back_queues = 0  # hosts with a non-empty back queue, checked out or parked
        self._checked_out = 0
        self._parked = 0
        self._rng = rng or random.Random(0)
        self._clock = clock or MonotonicClock()
        # Idle workers, each waiting on a future of its own, woken one at a time (a single shared
        # event woke every idle worker on every change: with hundreds of workers, many wake-ups
        # for each page fetched).
        self._idle: dict[asyncio.Future, None] = {}
        self._timed: list[float] = []  # deadlines of the idle workers watching the heap's head
        self._waking = 0  # idle workers woken by _notify that have not looked yet

    def state_of(self, host: str) -> VisitState:
        """The host's VisitState, created on first use and kept for the whole batch."""
        state = self.hosts.get(host)
        if state is None:
            state = self.hosts[host] = self._new_host(host)
        return state

    # -- adding work ---------------------------------------------------------------------

    def add(self, task: FetchTask) -> None:
        state = self.hosts.get(task.host)
        if state is not None and (state.back_queue or state.checked_out or state.parked):
            state.back_queue.append(task)  # the host already has a back queue: join it
        else:
            level = min(max(task.priority, 1), len(self.weights)) - 1
            self.front_queues[level].append(task)
        self._refill()

    def add_first(self, task: FetchTask) -> None:
        """Put a task at the head of its host's back queue now, past the front queues and the
        back-queue bound (a robots.txt hop that another host is parked waiting for). A parked
        host is woken: the task may be its own robots.txt hop."""
        state = self.state_of(task.host)
        if not (state.back_queue or state.checked_out or state.parked):
            self._active_back_queues += 1
        state.back_queue.appendleft(task)
        if state.parked:
            state.parked = False
            self._parked -= 1
        self._schedule(state)

    def _pick_front_queue(self) -> deque[FetchTask] | None:
        candidates = [(q, w) for q, w in zip(self.front_queues, self.weights) if q]
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0][0]
        queues, weights = zip(*candidates)
        return self._rng.choices(queues, weights=weights)[0]

    def _refill(self) -> None:
        """Move URLs from the front queues into back queues while back queues are free."""
        while self._active_back_queues < self.max_back_queues:
            queue = self._pick_front_queue()
            if queue is None:
                return
            task = queue.popleft()
            state = self.state_of(task.host)
            was_idle = not (state.back_queue or state.checked_out or state.parked)
            state.back_queue.append(task)
            if was_idle:
                self._active_back_queues += 1
                self._schedule(state)

    def _schedule(self, state: VisitState) -> None:
        if state.in_heap or state.checked_out or state.parked or not state.back_queue:
            return
        self._sequence += 1
        heapq.heappush(self._ready, (state.next_allowed, self._sequence, state.host))
        state.in_heap = True
        self._notify()

    def _notify(self) -> None:
        """Something changed: wake one idle worker if it has something to do (all of them when
        the batch is done). It has when the heap's head is due, or when no timed sleeper wakes
        by the head's time (the woken one watches it); not while another woken worker has yet
        to look, since that one hands the news on (acquire). Waking on every change instead
        woke three workers a turn at 512 in flight, nearly all to sleep again."""
        if not self.busy():
            while self._idle:
                self._waking += 1
                wake(self._idle.popitem()[0])
            return
        if self._waking or not self._idle or not self._ready:
            return
        due = self._ready[0][0]
        if due > self._clock.now() and self._timed and min(self._timed) <= due:
            return  # a sleeper's alarm rings by then
        waiter = next(iter(self._idle))
        del self._idle[waiter]
        self._waking += 1
        wake(waiter)

    def queued_tasks(self) -> list[FetchTask]:
        """Every task waiting, in the front queues and the back queues (for a checkpoint)."""
        waiting = [task for queue in self.front_queues for task in queue]
        waiting += [task for state in self.hosts.values() for task in state.back_queue]
        return waiting

    # -- the worker protocol ----------------------------------------------------------------

    def busy(self) -> bool:
        """Work remains: queued URLs, or a host checked out (which may add links) or parked."""
        return bool(self._ready) or self._checked_out > 0 or self._parked > 0 or any(self.front_queues)

    async def acquire(self) -> tuple[VisitState, FetchTask] | None:
        """The host whose turn comes first, and its next task; None when the batch is done.

        Idle workers sleep on futures of their own; a change wakes one of them (_notify), and
        only a worker that would wake sooner than every timed sleeper sleeps with a timeout
        (until the heap's head is due), so one worker, not all, wakes when a host comes due."""
        while True:
            now = self._clock.now()
            if self._ready:
                due, _, host = self._ready[0]
                wait = due - now
                if wait <= 0:
                    heapq.heappop(self._ready)
                    state = self.hosts[host]
                    _require(state.in_heap and not state.checked_out and not state.parked
                             and bool(state.back_queue), f"{host} in the heap but not ready")
                    state.in_heap = False
                    state.checked_out = True
                    self._checked_out += 1
                    if self._ready:
                        self._notify()  # the next host may be due too, or needs a watcher
                    return state, state.back_queue.popleft()
            elif not self.busy():
                self._notify()  # wake the other idle workers so they end too
                return None
            else:
                wait = None
            deadline = None if wait is None or (self._timed and min(self._timed) <= due) else due
            waiter = asyncio.get_running_loop().create_future()
            self._idle[waiter] = None
            if deadline is not None:
                self._timed.append(deadline)
            try:
                await self._clock.wait(waiter, None if deadline is None else wait)
            finally:
                if self._idle.pop(waiter, _WOKEN) is _WOKEN:  # _notify took it out and woke it
                    self._waking -= 1
                if deadline is not None:
                    self._timed.remove(deadline)

    def release(self, state: VisitState, delay_s: float, park: bool = False) -> None:
        """The worker is done with this host: it may be fetched again after delay_s.
        park: its next task waits for a request at another host; unpark() wakes it."""
        _require(state.checked_out, f"release of {state.host}, which is not checked out")
        _require(self.hosts.get(state.host) is state, f"release of an unknown state for {state.host}")
        _require(delay_s >= 0, f"negative delay {delay_s} for {state.host}")
        state.checked_out = False
        self._checked_out -= 1
        state.next_allowed = self._clock.now() + delay_s
        if park:
            _require(bool(state.back_queue), f"{state.host} parked with nothing to wait for")
            state.parked = True
            self._parked += 1
        elif state.back_queue:
            self._schedule(state)
        else:
            self._active_back_queues -= 1
            self._refill()
        _require(not state.checked_out and state.in_heap == bool(state.back_queue and not state.parked),
                 f"{state.host} released but not where the invariant puts it")
        self._notify()

    def unpark(self, state: VisitState) -> None:
        """The request a parked host waited for is done: it takes turns again."""
        if not state.parked:
            return  # woken already (add_first of its own robots.txt hop)
        _require(not state.checked_out and not state.in_heap, f"{state.host} parked and held")
        state.parked = False
        self._parked -= 1
        self._schedule(state)
        self._notify()

    def drop_host(self, state: VisitState) -> list[FetchTask]:
        """Empty a checked-out host's back queue (e.g. robots disallow-all); returns the tasks."""
        _require(state.checked_out, f"drop_host of {state.host}, which is not checked out")
        dropped = list(state.back_queue)
        state.back_queue.clear()
        return dropped
