"""When the ordinary site's pages change: a Poisson process per page, known exactly.

Time is measured in days since EPOCH (a float: 2.5 is noon of day 2); `DemoWeb(day=N)`
serves the web as it is at time N. Every page has its own rate of *content* changes per
day, drawn once from the seed (page_rate):

  home pages             2-8 a day (log-uniform): several times a day
  top pages /p/0-2.html  0.5-2 a day: index pages, about daily
  other /p/ pages        40 % never; 45 % rarely (every 30-180 days); 12 % every 3-14 days;
                         3 % every 0.5-2 days
  private pages          never

On top of those, a page sees boilerplate-only changes (its view counter moves; nothing in
the <article> changes) at BOILERPLATE_SHARE of all its changes, so they are a small share
of its versions and never count as a change of the page. Event times are drawn with an RNG
seeded by (seed, host, page): the same for every process and every asked time, so the
history up to time t is a prefix of the history up to any later time, and `truth.py` can
export every page's true rate, number of versions and last change.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from random import Random

from ..randomness import stable_int

EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)
BOILERPLATE_SHARE = 0.15  # of all change events, those that touch only the boilerplate
NEVER_SHARE, RARE_SHARE, WEEKLY_SHARE = 0.40, 0.45, 0.12  # of ordinary /p/ pages; the rest daily
TOP_PAGES = 3  # /p/0.html .. /p/2.html change like index pages


def moment(days: float) -> datetime:
    """The instant `days` after EPOCH, to the whole second (what HTTP dates can carry)."""
    return EPOCH + timedelta(seconds=math.floor(days * 86_400))


def _log_uniform(rng: Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def page_rate(seed: int, host_index: int, kind: str, n: int) -> float:
    """Content changes per day of page (kind, n) of a host: the true rate."""
    if kind in ("private", "robots", "sitemap"):
        return 0.0
    rng = Random(stable_int(seed, "rate", host_index, kind, n))
    if kind == "home":
        return _log_uniform(rng, 2.0, 8.0)
    if n < TOP_PAGES:
        return _log_uniform(rng, 0.5, 2.0)
    u = rng.random()
    if u < NEVER_SHARE:
        return 0.0
    if u < NEVER_SHARE + RARE_SHARE:
        return 1.0 / _log_uniform(rng, 30.0, 180.0)
    if u < NEVER_SHARE + RARE_SHARE + WEEKLY_SHARE:
        return 1.0 / _log_uniform(rng, 3.0, 14.0)
    return 1.0 / _log_uniform(rng, 0.5, 2.0)


@functools.lru_cache(maxsize=8192)
def _events(seed: int, host_index: int, kind: str, n: int, horizon: int) -> tuple[tuple[float, bool], ...]:
    """(time, content?) of every change event before `horizon` days, in time order."""
    rate = page_rate(seed, host_index, kind, n)
    if rate <= 0.0:
        return ()
    total_rate = rate / (1.0 - BOILERPLATE_SHARE)
    rng = Random(stable_int(seed, "changes", host_index, kind, n))
    out = []
    t = rng.expovariate(total_rate)
    while t < horizon:
        out.append((t, rng.random() >= BOILERPLATE_SHARE))
        t += rng.expovariate(total_rate)
    return tuple(out)


@dataclass(frozen=True)
class PageState:
    """A page as it is at one time."""

    rate: float  # true content changes per day
    versions: int  # content changes so far (0: the original text)
    events: int  # all changes so far, boilerplate-only ones included
    last_change: float | None  # days since EPOCH of the last content change, None if none
    last_event: float | None  # ... of the last change of any kind (what Last-Modified shows)

    @property
    def boilerplate_changes(self) -> int:
        return self.events - self.versions


def page_state(seed: int, host_index: int, kind: str, n: int, at: float) -> PageState:
    """Page (kind, n) of a host at time `at` (days since EPOCH)."""
    events = [e for e in _events(seed, host_index, kind, n, math.floor(at) + 1) if e[0] <= at]
    content = [t for t, is_content in events if is_content]
    return PageState(page_rate(seed, host_index, kind, n), len(content), len(events),
                     content[-1] if content else None, events[-1][0] if events else None)
