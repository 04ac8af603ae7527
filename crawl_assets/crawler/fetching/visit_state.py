"""Everything the fetch engine knows about one host during a batch, in one object (BUbiNG's
VisitState): its back queue and turn bookkeeping (kept by the workbench), its politeness,
its robots.txt rules per origin, its HTTP connection and how many of its URLs were admitted.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..url_policy.robots import RobotsPolicy
from .politeness import HostPoliteness


@dataclass(frozen=True)
class RobotsEntry:
    """The robots.txt policy of one origin, until `expires` (on the engine's clock)."""

    policy: RobotsPolicy
    expires: float
    # Why robots.txt could not be fetched at all: (status class, message), e.g. a DNS error.
    failure: tuple[str, str] | None = None
    applied: bool = False  # its consequences (crawl delay, dropping the host, sitemaps) taken


@dataclass(eq=False)
class VisitState:
    host: str
    politeness: HostPoliteness = field(default_factory=HostPoliteness.none)
    # The workbench's part (see workbench.py for the invariant these fields keep).
    back_queue: deque = field(default_factory=deque)  # of FetchTask, next first
    next_allowed: float = 0.0
    checked_out: bool = False
    in_heap: bool = False
    parked: bool = False
    # The engine's part.
    admitted: int = 0  # URLs queued in this batch, against the per-host page budget
    answered_at: float | None = None  # when its last request's answer was read (engine clock)
    robots: dict[str, RobotsEntry] = field(default_factory=dict)  # origin -> rules
    robots_pending: set[str] = field(default_factory=set)  # origins whose robots.txt hop is elsewhere
    # Set when the host is left alone for the rest of the batch: (status class, why) of
    # every URL of it that comes up (e.g. it asked for a Retry-After above the cap).
    left_alone: tuple[str, str] | None = None
    connection: Any = None  # the host's HTTP connection pool (clients.py), None when idle

    def robots_entry(self, origin: str, now: float) -> RobotsEntry | None:
        """The origin's robots.txt entry if known and not expired."""
        entry = self.robots.get(origin)
        if entry is not None and now < entry.expires:
            return entry
        return None
