"""Cheap signals the same day: the pages a sitemap or feed read in this batch dates after our
copy are fetched in the batch too, within what the day's budget leaves.

The fetch step passes the copies (URL -> when we last fetched it with content) of the pages
that the sitemaps and feeds of hosts whose dates are trusted have listed, for this shard's
hosts only, and the allowance: the part of the daily budget the plan left unplanned
(fetch_step.same_day_allowance). A page the plan holds already is not taken twice
(Admission.admit refuses a URL queued before). A batch resumed after a crash starts its
allowance again: at most one allowance more on such a day.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime


class DatedRefresh:
    def __init__(self, copies: Mapping[str, datetime], allowance: int):
        self.copies = copies
        self.left = allowance
        self.taken = 0  # pages admitted this way

    def candidates(self, dated: Iterable[tuple[str, datetime]]) -> list[str]:
        """The listed URLs whose date is after our copy of them (in the listing's order)."""
        if self.left <= 0:
            return []
        return [url for url, lastmod in dated if url in self.copies and lastmod > self.copies[url]]

    def spend(self) -> None:
        self.left -= 1
        self.taken += 1
