"""Leases on the URLs handed to workers: the batch's record of what is in flight.

A task a worker takes from the workbench is leased until `now + timeout`. finish() ends the
lease when the worker is done with it (answered, refused, put back for a retry). A lease
that runs out means the worker is gone or stuck: expired() hands the task back to be queued
again, and a late finish() of that lease says it was reclaimed (the caller's answer is then
a duplicate, which the fetch log's one-final-row-per-URL rule absorbs). A checkpoint counts
every outstanding lease as not done, so a crash puts exactly the in-flight URLs back.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from .workbench import FetchTask


@dataclass(frozen=True)
class Lease:
    number: int
    task: FetchTask
    expires: float


class LeaseTable:
    def __init__(self, clock, timeout_s: float):
        """clock: anything with now() (clock.py); timeout_s: how long a worker may hold a URL."""
        if timeout_s <= 0:
            raise ValueError(f"a lease timeout must be positive, not {timeout_s}")
        self._clock = clock
        self.timeout_s = timeout_s
        self._numbers = itertools.count(1)
        self._outstanding: dict[int, Lease] = {}

    def grant(self, task: FetchTask) -> Lease:
        lease = Lease(next(self._numbers), task, self._clock.now() + self.timeout_s)
        self._outstanding[lease.number] = lease
        return lease

    def finish(self, lease: Lease) -> bool:
        """End the lease; False when it had expired and its task was handed back already."""
        return self._outstanding.pop(lease.number, None) is not None

    def expired(self) -> list[FetchTask]:
        """The tasks of leases past their time, oldest first; those leases end here."""
        now = self._clock.now()
        late = sorted((lease for lease in self._outstanding.values() if lease.expires <= now),
                      key=lambda lease: lease.number)
        for lease in late:
            del self._outstanding[lease.number]
        return [lease.task for lease in late]

    def outstanding(self) -> list[FetchTask]:
        """The tasks in flight now, in the order they were handed out."""
        return [lease.task for _, lease in sorted(self._outstanding.items())]

    def __len__(self) -> int:
        return len(self._outstanding)
