"""When the ordinary site's pages change.

Each page has a change period (daily, ~weekly, ~monthly or never) and a phase; on day d it
shows the version of the last day <= d on which it changed. Home pages change daily,
private pages never."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from random import Random

from .randomness import stable_int

# Last-Modified of every page is EPOCH + the day its current version appeared.
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


def day_datetime(day: int) -> datetime:
    return EPOCH + timedelta(days=day)


def version_day(seed: int, host_index: int, kind: str, n: int, day: int) -> int:
    """The last day <= `day` on which page (kind, n) of the host changed; 0 if it never did."""
    if day <= 0 or kind == "private":
        return 0
    if kind == "home":
        return day  # home pages change daily
    rng = Random(stable_int(seed, "rate", host_index, n))
    u = rng.random()
    if u < 0.05:
        period = 1
    elif u < 0.20:
        period = rng.randint(5, 9)  # ~weekly
    elif u < 0.45:
        period = rng.randint(20, 40)  # ~monthly
    else:
        return 0  # most pages never change
    phase = rng.randrange(period)
    # Change days are the d >= 1 with (d + phase) % period == 0.
    last = day - (day + phase) % period
    return last if last >= 1 else 0
