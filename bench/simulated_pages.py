"""The live pages of freshness.py's simulated web and each policy's stored copies: per page
the last fetch time, the first change after it (the copy is fresh until then), and what the
fetches saw. `Pages` draws each page's changes as a Poisson process as it goes;
`ListedPages` reads them from a list made in advance (the bursty scenario, bursty_web.py).
With a `Start` (freshness.py --cold-start), pages appear during the run and a page may have no
copy yet: it counts only from the day it appears, as stale until its first fetch."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Start:
    """Which pages a policy holds a copy of at the start, and when each page appears."""

    born: np.ndarray  # per page: the day it appears (0: before the crawl)
    has_copy: np.ndarray  # per page: a copy is held from day 0 (fetched at first_fetch)
    events: object = None  # bursty_web.Changes of the changes beyond a page's own (Poisson web)
    event_rate: np.ndarray | None = None  # per page: the events' share of its rate (web.rate includes it)


class Pages:
    """Poisson pages: per page the last fetch time F, the first change after it c (the copy
    is fresh on [F, c)), and what was seen."""

    def __init__(self, web, rng: np.random.Generator, first_fetch: np.ndarray, born_on_day_0: bool = False,
                 start: Start | None = None):
        self.web, self.rng, self.start = web, rng, start
        n = len(web.rate)
        self.fetched = first_fetch.copy()
        self.next_change = self._next_change_after(np.arange(n), first_fetch)
        # Last-Modified at the first fetch: a change happened Exp(λ) before (a year for λ = 0);
        # on a web born on day 0, no earlier than its start.
        self.last_change = first_fetch - np.minimum(self._exp(np.arange(n)), 365.0)
        if born_on_day_0:
            self.last_change = np.maximum(self.last_change, 0.0)
        self.version = np.zeros(n, dtype=np.int64)
        self.views = np.zeros(n, dtype=np.int64)
        self._without_copies()

    def _without_copies(self) -> None:
        """Pages the Start holds no copy of: never fetched, stale from the day they appear."""
        self.has_copy = np.ones(len(self.fetched), bool) if self.start is None else self.start.has_copy.copy()
        none = ~self.has_copy
        self.fetched[none] = np.nan
        self.next_change[none] = np.maximum(self.start.born[none], 0.0) if none.any() else 0.0
        self.last_change[none] = np.nan

    def weights(self, day: int) -> np.ndarray:
        """Importance on `day`: 0 for a page that has not appeared yet."""
        return self.web.weight if self.start is None else np.where(self.start.born <= day, self.web.weight, 0.0)

    def _first_sighting(self, idx, when) -> np.ndarray:
        """Last-Modified at a page's first fetch: Exp(λ) back (at most a year), not before it appeared."""
        back = when - np.minimum(self._exp(idx), 365.0)
        return back if self.start is None else np.maximum(back, np.where(self.start.born[idx] > 0,
                                                                         self.start.born[idx], -np.inf))

    @property
    def text_version(self) -> np.ndarray:
        """The version of each stored copy's text (here every change is one of text)."""
        return self.version

    def lastmod_evidence(self, idx, when) -> list[tuple[str, float]]:
        """(url, lastmod day) rows of the sitemaps among the fetches: none here."""
        return []

    def _exp(self, idx) -> np.ndarray:
        rate = self.web.rate[idx]
        if self.start is not None and self.start.event_rate is not None:
            rate = np.maximum(rate - self.start.event_rate[idx], 0.0)
        with np.errstate(divide="ignore"):
            return np.where(rate > 0, self.rng.exponential(1.0, len(idx)) / np.where(rate > 0, rate, 1), np.inf)

    def _next_change_after(self, idx, when) -> np.ndarray:
        own = when + self._exp(idx)
        if self.start is None or self.start.events is None:
            return own
        return np.minimum(own, self.start.events.next_after(idx, when))

    def day_measures(self, day: int, idx: np.ndarray, when: np.ndarray) -> tuple[float, float]:
        """Importance-weighted fresh share and age over [day, day+1), for fetches `idx` at `when`
        (must be called before `fetch` applies them)."""
        end1 = np.full(len(self.fetched), day + 1.0)
        end1[idx] = when
        fresh = np.maximum(0.0, np.minimum(self.next_change, end1) - day)
        age = stale_integral(self.next_change, day, end1)
        # The copies fetched today: fresh from `when` to their next change.
        new_change = self._next_change_after(idx, when)
        fresh[idx] += np.maximum(0.0, np.minimum(new_change, day + 1.0) - when)
        age[idx] += stale_integral(new_change, when, np.full(len(idx), day + 1.0))
        self._pending = (idx, when, new_change)
        w = self.weights(day)
        return float((w * fresh).sum() / w.sum()), float((w * age).sum() / w.sum())

    def fetch(self) -> np.ndarray:
        """Apply today's fetches; returns whether each saw a real change (a first fetch did not)."""
        idx, when, new_change = self._pending
        first = ~self.has_copy[idx]
        changed = (self.next_change[idx] <= when) & ~first
        # Time reversal: the last change before `when` is Exp(λ) back, but not before the first.
        back = when - self._exp(idx)
        self.last_change[idx] = np.where(changed, np.maximum(self.next_change[idx], back), self.last_change[idx])
        if first.any():
            self.last_change[idx[first]] = self._first_sighting(idx[first], when[first])
        self.version[idx] += changed
        self._applied(idx, when, new_change)
        return changed

    def _applied(self, idx, when, new_change) -> None:
        self.views[idx] += 1
        self.fetched[idx] = when
        self.next_change[idx] = new_change
        self.has_copy[idx] = True


class ListedPages(Pages):
    """Pages whose changes were listed in advance (bursty_web.BurstyWeb): the bytes' version
    and the text's are counted separately (a template rebuild moves only the first), and a
    fetched sitemap lists its host's pages with the date of their last change of text."""

    def __init__(self, web, listed, first_fetch: np.ndarray, start: Start | None = None):
        self.web, self.listed, self.start = web, listed, start
        n = len(web.rate)
        every = np.arange(n)
        self.fetched = first_fetch.copy()
        self.next_change = listed.changes.next_after(every, first_fetch)
        self.last_change = listed.changes.last_until(every, first_fetch, listed.born)
        self.version = listed.changes.count_until(every, first_fetch)
        self._text_version = listed.text_changes.count_until(every, first_fetch)
        self.views = np.zeros(n, dtype=np.int64)
        self._pages_of_sitemap = {s: np.flatnonzero(listed.listed_by == s) for s in listed.sitemap_of_host if s >= 0}
        self._without_copies()

    @property
    def text_version(self) -> np.ndarray:
        return self._text_version

    def _next_change_after(self, idx, when) -> np.ndarray:
        return self.listed.changes.next_after(idx, when)

    def fetch(self) -> np.ndarray:
        idx, when, new_change = self._pending
        changed = (self.next_change[idx] <= when) & self.has_copy[idx]
        self.last_change[idx] = self.listed.changes.last_until(idx, when, self.listed.born[idx])
        if self.start is not None:  # (not before a page that appeared during the run did)
            appeared = self.start.born[idx]
            self.last_change[idx] = np.maximum(self.last_change[idx], np.where(appeared > 0, appeared, -np.inf))
        self.version[idx] = self.listed.changes.count_until(idx, when)
        self._text_version[idx] = self.listed.text_changes.count_until(idx, when)
        self._applied(idx, when, new_change)
        return changed

    def lastmod_evidence(self, idx, when) -> list[tuple[str, float]]:
        rows = []
        for i, t in zip(idx, when):
            listed = self._pages_of_sitemap.get(int(i))
            if listed is not None and self.start is not None:
                listed = listed[self.start.born[listed] <= t]  # (the pages there by then)
            if listed is not None:
                dates = self.listed.text_changes.last_until(listed, np.full(len(listed), t), self.listed.born[listed])
                rows += zip((self.web.urls[p] for p in listed), dates.tolist())
        return rows


def stale_integral(change, start, end) -> np.ndarray:
    """∫ max(0, s - change) ds over [start, end): the age accumulated by a copy."""
    c = np.asarray(change, dtype=np.float64)
    a = np.maximum(start, np.minimum(c, end))
    with np.errstate(invalid="ignore"):  # c = inf (never changes): no age, the where picks 0
        return np.where(c < end, ((end - c) ** 2 - (a - c) ** 2) / 2, 0.0)
