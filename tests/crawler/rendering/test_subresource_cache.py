"""The render tier's cache of subresources (crawler/rendering/subresource_cache.py) by HTTP's
caching rules (RFC 9111): what is stored, how long it is fresh, what a 304 refreshes, and the
byte bound. No browser, no server: answers are built here, time is a ManualClock."""

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from crawl_assets.crawler.archive.warc import Exchange
from crawl_assets.crawler.fetching.clock import ManualClock
from crawl_assets.crawler.fetching.http_exchange import HopResult, header_map
from crawl_assets.crawler.rendering.subresource_cache import SubresourceCache, freshness_lifetime_s

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
URL = "http://spa.test/static/app.js"


def http_date(moment: datetime) -> str:
    return format_datetime(moment, usegmt=True)


def answer(*headers: tuple[str, str], status: int = 200, body: bytes = b"app()", truncated: bool = False,
           at: datetime = NOW) -> HopResult:
    raw = [("Date", http_date(at)), *headers]
    exchange = Exchange(URL, "127.0.0.1", at, "GET", "/static/app.js", [], "HTTP/1.1", status, "OK", raw, body,
                        truncated=truncated)
    return HopResult(URL, at, exchange=exchange, headers=header_map(raw), truncated=truncated)


@pytest.mark.parametrize("headers, lifetime", [
    ([("Cache-Control", "public, max-age=3600")], 3600),
    ([("Cache-Control", "max-age=60"), ("Expires", http_date(NOW + timedelta(days=1)))], 60),  # max-age first
    ([("Expires", http_date(NOW + timedelta(minutes=10)))], 600),
    ([("Expires", "0")], 0),  # not a date: already expired
    ([("Last-Modified", http_date(NOW - timedelta(days=5)))], 0.1 * 5 * 86400),  # a tenth of its age
    ([("Last-Modified", http_date(NOW - timedelta(days=100)))], 86400),  # at most a day
    ([("Cache-Control", "no-cache, max-age=3600")], 0),  # revalidated on every use
    ([("ETag", '"v1"')], 0),  # a validator alone: revalidated on every use
    ([], 0),
])
def test_the_freshness_lifetime_follows_the_headers(headers, lifetime):
    assert freshness_lifetime_s(answer(*headers).headers) == pytest.approx(lifetime)


def test_a_fresh_answer_is_served_until_it_is_stale_its_arrival_age_counted():
    clock = ManualClock()
    cache = SubresourceCache(clock)
    cache.store(URL, answer(("Cache-Control", "max-age=100"), ("Age", "30")), "sha1:A")
    assert cache.fresh(URL).exchange.body == b"app()"
    clock.advance(69)
    assert cache.fresh(URL) is not None
    clock.advance(1)  # 30 s old on arrival + 70 s held
    assert cache.fresh(URL) is None and cache.entry(URL) is not None  # stale, kept for revalidation
    assert cache.hits == 2


def test_what_may_not_be_stored_is_not():
    cache = SubresourceCache(ManualClock())
    for url, hop in [("a", answer(("Cache-Control", "no-store, max-age=100"))),
                     ("b", answer(("Cache-Control", "max-age=100"), ("Vary", "*"))),
                     ("c", answer(("Cache-Control", "max-age=100"), truncated=True)),
                     ("d", answer(("Cache-Control", "max-age=100"), status=500)),
                     ("e", answer(("Cache-Control", "max-age=100"), status=302))]:
        cache.store(url, hop, None)
        assert cache.entry(url) is None, url
    cache.store("f", answer(("Cache-Control", "private, max-age=100"), status=404), None)
    assert cache.fresh("f").status == 404  # a private cache keeps `private`; a 404 is cacheable


def test_a_stale_answer_gives_its_validators_and_a_304_refreshes_it():
    clock = ManualClock()
    cache = SubresourceCache(clock)
    modified = http_date(NOW - timedelta(days=3))
    cache.store(URL, answer(("Cache-Control", "no-cache"), ("ETag", '"v1"'), ("Last-Modified", modified),
                            ("Content-Length", "5")), "sha1:A")
    stored = cache.entry(URL)
    assert cache.fresh(URL) is None and stored.validators() == {"If-None-Match": '"v1"', "If-Modified-Since": modified}
    later = NOW + timedelta(minutes=5)
    not_modified = answer(("Cache-Control", "max-age=600"), ("ETag", '"v1"'), ("Content-Length", "0"),
                          status=304, body=b"", at=later)
    served = cache.refreshed(URL, stored, not_modified)
    assert served.status == 200 and served.exchange.body == b"app()"  # the stored body, again
    assert served.header("cache-control") == "max-age=600" and served.header("date") == http_date(later)
    assert served.header("content-length") == "5"  # the 304's own length is not the body's
    assert cache.fresh(URL) is served and cache.entry(URL).digest == "sha1:A" and cache.revalidated == 1


def test_a_new_answer_replaces_the_stored_one_and_one_that_may_not_be_kept_drops_it():
    cache = SubresourceCache(ManualClock())
    cache.store(URL, answer(("Cache-Control", "max-age=100"), body=b"v1"), "sha1:1")
    cache.store(URL, answer(("Cache-Control", "max-age=100"), body=b"v2"), "sha1:2")
    assert cache.fresh(URL).exchange.body == b"v2" and cache.entry(URL).digest == "sha1:2"
    cache.store(URL, answer(("Cache-Control", "no-store")), None)
    assert cache.entry(URL) is None


def test_the_least_recently_used_answers_go_past_the_byte_bound():
    cache = SubresourceCache(ManualClock(), max_bytes=10)
    for name in "abc":
        cache.store(name, answer(("Cache-Control", "max-age=100"), body=b"1234"), None)
        cache.fresh("a")  # "a" used after each store: kept
    assert cache.entry("a") is not None and cache.entry("b") is None and cache.entry("c") is not None
    cache.store("big", answer(("Cache-Control", "max-age=100"), body=b"x" * 11), None)
    assert cache.entry("big") is None and cache.entry("a") is not None  # larger than the bound: not kept
