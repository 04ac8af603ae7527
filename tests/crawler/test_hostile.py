"""The fetch engine against the demo web's hostile hosts: each URL ends with the right
status class within its time limit, and the ordinary hosts beside them are crawled whole."""

import dataclasses
import ipaddress
import time
from collections import Counter
from urllib.parse import urlsplit

import pytest

from crawl_assets.crawler.batch import run_fetch_batch
from crawl_assets.crawler.workbench import FetchTask
from crawl_assets.crawler.settings import NetworkException, load_settings
from crawl_assets.crawler.vocabulary import StatusClass
from crawl_assets.demoweb import DemoWeb, DemoWebThread

FETCH_TIMEOUT_S = 3.0


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    settings = dataclasses.replace(
        load_settings(use_env=False),
        default_delay_s=0.05, fetch_timeout_s=FETCH_TIMEOUT_S, connect_timeout_s=1.0,
        retry_base_s=0.1, max_retry_after_s=5.0, max_crawl_delay_s=5.0, shard_count=1,
        resolver_overrides={"*.demo.test": "127.0.0.1"}, host_scope=("*.demo.test",),
        network_exceptions=(NetworkException(("*.demo.test",), (ipaddress.ip_network("127.0.0.0/8"),)),),
    )
    with DemoWebThread(DemoWeb(seed=5, hosts=2, pages_per_host=5, hostile=True), port=0) as web:
        hostile = web.web.hostile_hosts()
        urls = web.web.seed_urls() + [h.home for h in hostile] + [u for h in hostile for u in h.urls]
        started = time.monotonic()
        result = run_fetch_batch(settings, 0, [FetchTask.for_url(u) for u in dict.fromkeys(urls)],
                                 tmp_path_factory.mktemp("warc"), "hostile")
        elapsed = time.monotonic() - started
        # The server logs a request just after its response is drained, so the crawler can be
        # done a moment before the last rows appear: wait for every request the crawler made.
        wanted = expected_requests(result.output.records)
        logged_in_time = web.access_log.wait_for(sum(wanted.values()), timeout=5)
        assert logged_in_time, wanted - Counter((row.host, row.path) for row in web.access_log.rows)
    return web, hostile, result, elapsed


def expected_requests(records) -> Counter:
    """(host, path) -> how many requests the fetch log says were made: each URL's attempts,
    and one robots.txt per host (cached for the batch)."""
    wanted = Counter({(host, "/robots.txt"): 1 for host in {r.host for r in records}})
    for record in records:
        parts = urlsplit(record.url)
        wanted[(parts.hostname, parts.path + (f"?{parts.query}" if parts.query else ""))] += record.attempts
    return +wanted  # disallowed and deferred URLs (0 attempts) must never reach the server


def final_record(by_url, url):
    """Follow a URL's redirect hops to the record where its fetch ended."""
    record = by_url[url]
    while record.status_class == "redirect" and record.redirect_to in by_url:
        record = by_url[record.redirect_to]
    return record


def test_the_server_saw_exactly_the_requests_the_fetch_log_counts(crawl):
    web, _, result, _ = crawl
    records = result.output.records
    logged = Counter((row.host, row.path) for row in web.access_log.rows)
    assert logged == expected_requests(records)
    never_asked = [r.url for r in records if r.status_class in (
        StatusClass.ROBOTS_DISALLOWED, StatusClass.ROBOTS_UNAVAILABLE, StatusClass.DEFERRED_CRAWL_DELAY)]
    assert len(never_asked) >= 5 and all(
        logged[(urlsplit(u).hostname, urlsplit(u).path)] == 0 for u in never_asked)


def test_every_hostile_url_ends_with_the_expected_status_class(crawl):
    _, hostile, result, _ = crawl
    by_url = {r.url: r for r in result.output.records}
    outcomes = {url: final_record(by_url, url).status_class for h in hostile for url in h.urls}
    expected = {url: h.expected_by_url[url] for h in hostile for url in h.urls}
    assert outcomes == expected


def test_slow_and_silent_servers_cannot_hold_a_worker(crawl):
    _, hostile, result, elapsed = crawl
    by_url = {r.url: r for r in result.output.records}
    for host in hostile:
        if host.kind in ("slow_drip", "never_answer"):
            (url,) = host.urls
            # The whole-fetch limit cut it: the drip alone would take 100,000 s (1 byte a second) and the
            # silent host forever. The slack is for a loaded machine's slow event loop (5.2 s seen
            # at load 9 for this 3 s limit), not for a missing limit.
            assert by_url[url].duration_ms / 1000 <= 2 * FETCH_TIMEOUT_S
    assert elapsed < 30  # the whole batch, hostile hosts included


def test_the_ordinary_hosts_beside_them_are_crawled_completely(crawl):
    web, _, result, _ = crawl
    fetched = {r.url for r in result.output.records if r.status_class == "ok"}
    for index in range(2):
        rules = web.web.robots_rules(index)
        allowed = [u for u in web.web.page_urls(index)
                   if not any(d in u for d in rules["disallow"])]
        assert set(allowed) <= fetched


def test_retry_after_and_backoff_are_honoured(crawl):
    web, hostile, result, _ = crawl
    rows = web.access_log.rows
    pushed_back = [h for h in hostile if h.kind in ("rate_limited", "flapping_503")]
    assert len(pushed_back) == 2
    for host in pushed_back:
        (url,) = host.urls
        path = url.split(host.hostname, 1)[1].split("/", 1)[1]
        hits = sorted((r for r in rows if r.host == host.hostname and r.path == "/" + path),
                      key=lambda r: r.start)
        statuses = [r.status for r in hits]
        assert statuses[-1] == 200 and set(statuses[:-1]) <= {429, 503} and len(hits) <= 3
        for before, after in zip(hits, hits[1:]):
            assert after.start - before.end >= host.config["retry_after_s"]
        record = next(r for r in result.output.records if r.url == url)
        assert record.attempts == len(hits)


def test_bombs_and_huge_bodies_are_cut_at_the_cap(crawl):
    _, hostile, result, _ = crawl
    cap = load_settings(use_env=False).max_body_bytes
    by_url = {r.url: r for r in result.output.records}
    for host in hostile:
        if host.kind in ("endless_body", "huge_body", "gzip_bomb"):
            (url,) = host.urls
            assert by_url[url].bytes <= cap


def test_binary_and_badly_encoded_pages_are_archived_not_parsed(crawl):
    _, hostile, result, _ = crawl
    by_url = {r.url: r for r in result.output.records}
    for host in hostile:
        if host.kind == "binary_html":
            for url in host.urls:
                assert by_url[url].outlinks == 0 and by_url[url].warc_file
        if host.kind == "malformed_html":
            (url,) = host.urls
            targets = {link[1] for link in result.output.links if link[0] == url}
            assert set(host.config["links"]) <= targets
