"""Hosts that push back, against a live demo web in its own process: Retry-After above the cap
and as an HTTP date (429/503), and a slow host whose delay grows with its response time.
The demo web's access log is the judge: what was asked, how often, and at what spacing."""

import dataclasses
import ipaddress
import math
from collections import Counter
from urllib.parse import urlsplit

import pytest

from crawl_assets.crawler.batches.batch import run_fetch_batch
from crawl_assets.crawler.fetching.workbench import FetchTask
from crawl_assets.crawler.settings import NetworkException, load_settings
from crawl_assets.crawler.vocabulary import StatusClass
from support import DemoWebProcess, assert_polite

DELAY_S = 0.05
MAX_RETRY_AFTER_S = 5.0
RESPONSE_TIME_FACTOR = 2.0
KINDS = ("retry_after_long", "retry_after_date", "slow_host")


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    settings = dataclasses.replace(
        load_settings(use_env=False),
        default_delay_s=DELAY_S, fetch_timeout_s=3.0, connect_timeout_s=1.0, retry_base_s=0.1,
        max_attempts=3, max_retry_after_s=MAX_RETRY_AFTER_S, response_time_factor=RESPONSE_TIME_FACTOR,
        max_pages_per_host=6, shard_count=1,
        resolver_overrides={"*.demo.test": "127.0.0.1"}, host_scope=("*.demo.test",),
        network_exceptions=(NetworkException(("*.demo.test",), (ipaddress.ip_network("127.0.0.0/8"),)),),
    )
    with DemoWebProcess(seed=3, hosts=1, pages_per_host=3, politeness=True) as server:
        hosts = {h.kind: h for h in server.web.politeness_hosts() if h.kind in KINDS}
        assert set(hosts) == set(KINDS)
        urls = server.web.seed_urls() + [u for h in hosts.values() for u in (h.home, *h.urls)]
        result = run_fetch_batch(settings, 0, [FetchTask.for_url(u) for u in dict.fromkeys(urls)],
                                 tmp_path_factory.mktemp("warc"), "pushback")
        rows = server.stop()
    return settings, hosts, {r.url: r for r in result.output.records}, rows


def requests_to(rows, url):
    parts = urlsplit(url)
    return sorted((r for r in rows if r["host"] == parts.hostname and r["path"] == parts.path),
                  key=lambda r: r["start"])


def retry_after_moments(hosts):
    """The assert_polite `retry_after` function for these hosts: after a 429/503, the moment
    its Retry-After names, at the earliest: delta-seconds count from the row's `end` (the
    answer was handed to the socket then, the crawler had it no sooner), and an HTTP date,
    the answer's time plus the seconds rounded up to a whole second (politeness_hosts), is
    at least ceil(start + seconds)."""
    long_host, date_host = hosts["retry_after_long"], hosts["retry_after_date"]
    soon_path = urlsplit(date_host.urls[0]).path

    def moment(row):
        if row["status"] not in (429, 503):
            return None
        if row["host"] == long_host.hostname:
            return row["end"] + long_host.config["retry_after_s"]
        if row["host"] == date_host.hostname:
            seconds = date_host.config["soon_s" if row["path"] == soon_path else "later_s"]
            return math.ceil(row["start"] + seconds)
        return None
    return moment


def test_a_retry_after_above_the_cap_is_recorded_and_not_retried(crawl):
    """The first URL to get the long Retry-After is recorded as answered, once; after it the
    host is left alone, so its other URL is not asked at all (deferred to a later cycle)."""
    _, hosts, by_url, rows = crawl
    for kind in ("retry_after_long", "retry_after_date"):
        host = hosts[kind]
        for url, status in host.config["statuses"].items():
            record = by_url[url]
            if kind == "retry_after_date" and status == 503:
                continue  # 2 s ahead: within the cap, see the next test
            if record.status_class == StatusClass.DEFERRED_RETRY_AFTER:
                assert record.status is None and record.attempts == 0 and not requests_to(rows, url), url
                continue
            assert (record.status, record.status_class) == (status, host.expected_by_url[url]), url
            assert record.attempts == 1 and len(requests_to(rows, url)) == 1, url
    long_records = [by_url[u] for u in hosts["retry_after_long"].config["statuses"]]
    assert sorted(r.status_class == StatusClass.DEFERRED_RETRY_AFTER for r in long_records) == [False, True]


def test_a_refused_retry_after_says_why_in_the_fetch_log(crawl):
    _, hosts, by_url, _ = crawl
    for url in hosts["retry_after_long"].urls:
        error = by_url[url].error or ""
        assert "Retry-After" in error and "7200" in error and "max_retry_after_s (5 s)" in error, (url, error)


def test_an_http_date_retry_after_is_waited_for_then_the_url_is_fetched(crawl):
    _, hosts, by_url, rows = crawl
    host = hosts["retry_after_date"]
    soon = host.urls[0]
    assert host.config["statuses"][soon] == 503
    first, second = requests_to(rows, soon)
    assert (first["status"], second["status"]) == (503, 200)
    assert second["start"] >= math.ceil(first["start"] + host.config["soon_s"])
    assert (by_url[soon].status_class, by_url[soon].attempts) == (StatusClass.OK, 2)


def test_the_slow_host_is_asked_at_its_response_time_times_the_factor(crawl):
    settings, hosts, by_url, rows = crawl
    host = hosts["slow_host"]
    slow = sorted((r for r in rows if r["host"] == host.hostname), key=lambda r: r["start"])
    took = [r["end"] - r["start"] for r in slow]
    gaps = [after["start"] - before["end"] for before, after in zip(slow, slow[1:])]
    # robots.txt, the home page and pages up to the host budget, each answered after 0.25 s.
    assert len(slow) == 1 + settings.max_pages_per_host and min(took) >= host.config["response_s"]
    # The gaps follow the response time: factor x 0.25 s = 0.5 s, ten times the configured 0.05 s.
    assert min(gaps) >= RESPONSE_TIME_FACTOR * host.config["response_s"]
    assert all(by_url[u].status_class == StatusClass.OK for u in by_url if urlsplit(u).hostname == host.hostname)


def test_every_host_was_asked_politely(crawl):
    """One request at a time per host, the delay, the adaptive delay and every Retry-After
    within the cap, on every host but the one that asked for more than the cap."""
    _, hosts, _, rows = crawl
    long_host = hosts["retry_after_long"].hostname
    assert_polite([r for r in rows if r["host"] != long_host], DELAY_S,
                  response_time_factor=RESPONSE_TIME_FACTOR, retry_after=retry_after_moments(hosts))


def test_a_host_asking_for_more_than_the_cap_is_left_alone(crawl):
    _, hosts, _, rows = crawl
    long_host = hosts["retry_after_long"].hostname
    assert [r["status"] for r in sorted(rows, key=lambda r: r["start"]) if r["host"] == long_host][-1] in (429, 503)
    assert_polite([r for r in rows if r["host"] == long_host], DELAY_S,
                  response_time_factor=RESPONSE_TIME_FACTOR, retry_after=retry_after_moments(hosts))


def test_the_server_saw_no_request_the_fetch_log_does_not_count(crawl):
    _, _, by_url, rows = crawl
    logged = Counter((r["host"], r["path"]) for r in rows)
    wanted = Counter({(urlsplit(u).hostname, "/robots.txt"): 1 for u in by_url})
    for url, record in by_url.items():
        wanted[(urlsplit(url).hostname, urlsplit(url).path)] += record.attempts
    assert logged == +wanted


def test_a_url_the_host_throttled_is_asked_again_the_next_day(crawl, tmp_path):
    """429 and 503 with Retry-After mean "slow down": recorded as throttled, and planned for the
    next day like a URL not answered yet, not put on the not-found back-off a 4xx gets."""
    from datetime import date, timedelta

    import pyarrow as pa

    from crawl_assets.crawler.batches.arrow_schemas import fetch_log_table
    from crawl_assets.pipeline.change_stats.change_stats_step import change_stats
    from crawl_assets.pipeline.change_stats.url_change_state import read_change_stats
    from crawl_assets.pipeline.priorities.priorities_step import Kind, recrawl_priorities
    from crawl_assets.storage.layout import fetch_log_file, write_parquet_atomic

    settings, hosts, by_url, _ = crawl
    pushing_back = {hosts["retry_after_long"].hostname, hosts["retry_after_date"].hostname}
    throttled = {url for url, r in by_url.items() if r.status in (429, 503) and urlsplit(url).hostname in pushing_back}
    assert len(throttled) == 2 and {by_url[u].status_class for u in throttled} == {StatusClass.THROTTLED}
    day = "2026-11-20"
    write_parquet_atomic(fetch_log_table(list(by_url.values())), fetch_log_file(tmp_path, day, "s00"))
    change_stats([str(fetch_log_file(tmp_path, day, "s00"))], day, settings, state_root=tmp_path)
    stats = read_change_stats(tmp_path, day)
    known = pa.table({"url": list(by_url), "host": [urlsplit(u).hostname for u in by_url]})
    tomorrow = date.fromisoformat(day) + timedelta(days=1)
    plan = {r["url"]: r for r in recrawl_priorities(stats, None, None, known, tomorrow, settings).urls.to_pylist()}
    for url in throttled:
        assert (plan[url]["kind"], plan[url]["planned"], plan[url]["next_due"]) == (Kind.DISCOVERY, True, tomorrow), url
