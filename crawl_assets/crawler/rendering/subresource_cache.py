"""The render tier's HTTP cache: what the browser fetched for one page (a script, a stylesheet,
JSON) serves the next pages of the fetch batch (a day's shard) as a browser's private cache
would, by HTTP's caching rules (RFC 9111), so a host is asked for its app once a day, not once
a page. The cache sits behind the polite fetch path (polite_fetch.py): what it cannot answer
is asked for there, robots.txt, the host's delay and the archive included.

- Stored: a complete answer (not cut at the size cap) with a status cacheable by default
  (RFC 9110 15.1: 200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501), unless its
  Cache-Control says no-store or its Vary is "*". (A private cache: `private` is stored.)
- Fresh while its age is below its freshness lifetime: Cache-Control max-age, else Expires
  less Date, else, for an answer with Last-Modified, a tenth of the time since then
  (heuristic, at most HEURISTIC_CAP_S); no-cache makes every use a revalidation. Its age is
  the Age header or Date's lag behind its arrival, whichever is larger, plus the time held.
- A fresh answer is served without a request. A stale one with a validator (ETag,
  Last-Modified) is asked for conditionally: a 304 refreshes its headers and its body is
  served again; any other answer replaces it. A stale one without a validator is asked for
  again in full.
- At most max_bytes of bodies are held: the least recently used answer goes first.
Request headers the crawler sends are the same for every request, so Vary (but "*") cannot
select another answer."""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime
from email.utils import parsedate_to_datetime

from ..fetching.http_exchange import HopResult, header_map

CACHEABLE_BY_DEFAULT = frozenset({200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501})
HEURISTIC_SHARE = 0.1  # of the time since Last-Modified (RFC 9111 4.2.2's suggestion)
HEURISTIC_CAP_S = 86400.0
MAX_BYTES = 64 << 20  # bodies held, a batch's default
# Headers a 304 brings that update the stored answer (RFC 9111 4.3.4: all but these few).
_NOT_UPDATED = frozenset({"content-length", "content-encoding", "transfer-encoding", "content-range"})


def directives(cache_control: str | None) -> dict[str, str | None]:
    """Cache-Control's directives by lower-case name (a value without its quotes)."""
    found: dict[str, str | None] = {}
    for part in (cache_control or "").split(","):
        name, _, value = part.strip().partition("=")
        if name:
            found[name.lower()] = value.strip().strip('"') or None
    return found


def _seconds(value: str | None) -> float | None:
    return float(value) if value is not None and re.fullmatch(r"\d+", value) else None


def _date(value: str | None) -> datetime | None:
    try:
        return parsedate_to_datetime(value) if value else None
    except (TypeError, ValueError, IndexError):
        return None


def freshness_lifetime_s(headers: dict[str, str]) -> float:
    """How long an answer stays fresh from when it was made (0: to be revalidated on use)."""
    rules = directives(headers.get("cache-control"))
    if "no-cache" in rules:
        return 0.0
    max_age = _seconds(rules.get("max-age"))
    if max_age is not None:
        return max_age
    expires, date = _date(headers.get("expires")), _date(headers.get("date"))
    if "expires" in headers:  # an Expires that is not a date means already expired
        return max(0.0, (expires - date).total_seconds()) if expires and date else 0.0
    modified = _date(headers.get("last-modified"))
    if modified and date and date > modified:
        return min(HEURISTIC_SHARE * (date - modified).total_seconds(), HEURISTIC_CAP_S)
    return 0.0


def storable(hop: HopResult) -> bool:
    """Whether an answer may be stored at all."""
    if hop.exchange is None or hop.truncated or hop.exchange.status not in CACHEABLE_BY_DEFAULT:
        return False
    return "no-store" not in directives(hop.header("cache-control")) and (hop.header("vary") or "").strip() != "*"


@dataclass(frozen=True)
class CachedAnswer:
    """A stored answer: the exchange the browser is served, and what its freshness rests on."""

    hop: HopResult
    digest: str | None  # its payload digest (the capture a 304 revisit refers to)
    lifetime_s: float
    age_at_arrival_s: float
    arrived_at: float  # the fetch path's clock

    def age_s(self, now: float) -> float:
        return self.age_at_arrival_s + max(0.0, now - self.arrived_at)

    def fresh(self, now: float) -> bool:
        return self.age_s(now) < self.lifetime_s

    def validators(self) -> dict[str, str]:
        """The conditional request's headers (none: it cannot be revalidated)."""
        asked = {}
        if self.hop.header("etag"):
            asked["If-None-Match"] = self.hop.header("etag")
        if self.hop.header("last-modified"):
            asked["If-Modified-Since"] = self.hop.header("last-modified")
        return asked

    @property
    def size(self) -> int:
        return len(self.hop.exchange.body)


def age_at_arrival_s(hop: HopResult) -> float:
    """The answer's age when it arrived: its Age header, or how far its Date lags behind."""
    date = _date(hop.header("date"))
    apparent = max(0.0, (hop.started_at - date).total_seconds()) if date and date.tzinfo else 0.0
    return max(apparent, _seconds(hop.header("age")) or 0.0)


class SubresourceCache:
    def __init__(self, clock, max_bytes: int = MAX_BYTES):
        """clock: .now() in seconds (the fetch path's)."""
        self.clock, self.max_bytes = clock, max_bytes
        self._answers: OrderedDict[str, CachedAnswer] = OrderedDict()
        self._bytes = 0
        self.hits = 0  # answers served without a request
        self.revalidated = 0  # conditional requests answered 304

    def entry(self, url: str) -> CachedAnswer | None:
        """The stored answer of `url`, fresh or not (marked as used)."""
        answer = self._answers.get(url)
        if answer is not None:
            self._answers.move_to_end(url)
        return answer

    def fresh(self, url: str) -> HopResult | None:
        """The stored answer of `url` if it may be served without a request (counted as a hit)."""
        answer = self.entry(url)
        if answer is None or not answer.fresh(self.clock.now()):
            return None
        self.hits += 1
        return answer.hop

    def store(self, url: str, hop: HopResult, digest: str | None) -> None:
        """Keep an answer just received (or drop the one stored, if this one may not be kept)."""
        self._drop(url)
        if not storable(hop):
            return
        answer = CachedAnswer(hop, digest, freshness_lifetime_s(hop.headers or {}), age_at_arrival_s(hop),
                              self.clock.now())
        if answer.size > self.max_bytes:
            return
        self._answers[url] = answer
        self._bytes += answer.size
        while self._bytes > self.max_bytes:
            self._drop(next(iter(self._answers)))

    def refreshed(self, url: str, stored: CachedAnswer, not_modified: HopResult) -> HopResult:
        """The stored answer with the headers a 304 brought (RFC 9111 4.3.4), kept again; it is
        what the browser is served."""
        fresh_headers = {k.lower(): (k, v) for k, v in not_modified.exchange.response_headers
                         if k.lower() not in _NOT_UPDATED}
        old = stored.hop.exchange
        merged = [fresh_headers.pop(k.lower(), (k, v)) for k, v in old.response_headers] + list(fresh_headers.values())
        exchange = replace(old, response_headers=merged)
        hop = replace(stored.hop, exchange=exchange, headers=header_map(merged), started_at=not_modified.started_at)
        self.revalidated += 1
        self.store(url, hop, stored.digest)
        return hop

    def _drop(self, url: str) -> None:
        answer = self._answers.pop(url, None)
        if answer is not None:
            self._bytes -= answer.size
