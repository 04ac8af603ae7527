"""The politeness test hosts (politeness_hosts.py): cross-host redirects, robots.txt
redirects (same host, other host, too long a chain, unparsable Location), long and dated
Retry-After, a slow host. Each is checked over real loopback sockets, with httpx and the
Host header set, against its own description."""

from __future__ import annotations

import time
import urllib.robotparser
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import httpx
import pytest

from demoweb import DemoWeb, DemoWebThread, HostileHost
from demoweb.process import DemoWebProcess
from demoweb.special_hosts.politeness_hosts import (BUSY_LOGGED_LATE_S, FAR_CRAWL_DELAY_S, KINDS,
                                                   LONG_RETRY_AFTER_S, ROBOTS_CHAIN_HOPS, SLOW_RESPONSE_S,
                                                   SOON_RETRY_AFTER_S)


@pytest.fixture(scope="module")
def demo():
    with DemoWebThread(DemoWeb(seed=2, hosts=2, pages_per_host=5, politeness=True), port=0) as thread:
        yield thread


@pytest.fixture(scope="module")
def hosts(demo) -> dict[str, HostileHost]:
    return {h.kind: h for h in demo.web.politeness_hosts()}


def robots_of(text: str) -> urllib.robotparser.RobotFileParser:
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(text.splitlines())
    return parser


def test_every_kind_is_described_and_opt_in(demo, hosts, client):
    assert list(hosts) == list(KINDS)
    assert DemoWeb(hosts=1).politeness_hosts() == []
    for kind, h in hosts.items():
        assert h.hostname == f"{KINDS[kind]}.demo.test" and h.home == f"http://{h.hostname}:{demo.port}/"
        assert set(h.expected_by_url) == set(h.urls)
    # the home page links every URL of the host (a crawler seeded with it meets them all)
    for h in hosts.values():
        if h.home_expected != "ok":
            continue
        home = client.get_url(h.home).text
        assert all(f'href="{urlsplit(u).path}"' in home for u in h.urls), h.kind


def test_cross_host_redirects_go_to_pages_of_the_target_host(client, hosts):
    source, target = hosts["cross_host_redirect"], hosts["redirect_target"]
    assert source.config["target_host"] == target.hostname
    assert {s for s, _ in source.config["redirects"].values()} == {301, 302}
    for url, (status, location) in source.config["redirects"].items():
        r = client.get_url(url)
        assert (r.status_code, r.headers["location"]) == (status, location)
        assert location in target.urls
        assert client.get_url(location).status_code == 200


def test_the_redirect_target_has_its_own_delay_and_rules(client, hosts):
    target = hosts["redirect_target"]
    text = client.get_url(target.home + "robots.txt").text
    assert f"Crawl-delay: {target.config['crawl_delay_s']}\n" in text  # urllib reads only integer delays
    robots = robots_of(text)
    for url, expected in target.expected_by_url.items():
        assert robots.can_fetch("recrawl", url) == (expected == "ok")
        assert client.get_url(url).status_code == 200  # disallowed, but there if asked


def test_robots_txt_redirected_to_another_host_carries_that_hosts_rules(client, hosts):
    h, target = hosts["robots_cross_host"], hosts["redirect_target"]
    r = client.get_url(h.home + "robots.txt")
    assert r.status_code == 301 and r.headers["location"] == h.config["robots_location"]
    assert urlsplit(r.headers["location"]).hostname == target.hostname == h.config["robots_host"]
    rules = client.get_url(r.headers["location"])
    assert rules.status_code == 200
    robots = robots_of(rules.text)
    for url, expected in h.expected_by_url.items():
        assert robots.can_fetch("recrawl", url) == (expected == "ok")
        assert client.get_url(url).status_code == 200


def test_robots_txt_moved_on_the_same_host(client, hosts):
    h = hosts["robots_same_host"]
    r = client.get_url(h.home + "robots.txt")
    assert r.status_code == 301 and r.headers["location"] == h.config["robots_location"]
    assert urlsplit(r.headers["location"]).hostname == h.hostname
    rules = client.get_url(r.headers["location"]).text
    assert f"Crawl-delay: {h.config['crawl_delay_s']}\n" in rules
    robots = robots_of(rules)
    assert {u: robots.can_fetch("recrawl", u) for u in h.urls} == {
        u: e == "ok" for u, e in h.expected_by_url.items()}
    assert "robots_disallowed" in h.expected_by_url.values()


def test_robots_redirect_chain_is_longer_than_five_hops(client, hosts):
    h = hosts["robots_redirect_chain"]
    url, hops = h.home + "robots.txt", 0
    while True:
        r = client.get_url(url)
        if r.status_code not in (301, 302):
            break
        hops += 1
        url = r.headers["location"]
        assert urlsplit(url).hostname == h.hostname
    assert hops == ROBOTS_CHAIN_HOPS == h.config["hops"] > 5
    assert r.status_code == 200 and not robots_of(r.text).can_fetch("recrawl", h.home + "page.html")
    assert h.expected == h.home_expected == "robots_unavailable"


def test_robots_redirect_with_an_unparsable_location(client, hosts):
    h = hosts["robots_bad_location"]
    r = client.get_url(h.home + "robots.txt")
    assert r.status_code == 301 and r.headers["location"] == h.config["location"]
    with pytest.raises(ValueError):
        urlsplit(r.headers["location"])
    assert client.get_url(h.home + "page.html").status_code == 200


def test_retry_after_above_any_cap(client, hosts):
    h = hosts["retry_after_long"]
    for url, status in h.config["statuses"].items():
        for _ in range(2):  # every time, not only the first
            r = client.get_url(url)
            assert r.status_code == status and r.headers["retry-after"] == str(LONG_RETRY_AFTER_S)
    assert h.expected_by_url == {u: "throttled" for u in h.config["statuses"]}  # 429 and 503 alike


def test_retry_after_as_an_http_date(hosts, client):
    h = hosts["retry_after_date"]
    soon, later = h.urls
    before = time.time()
    first = client.get_url(soon)
    assert first.status_code == 503
    when = parsedate_to_datetime(first.headers["retry-after"]).timestamp()
    assert before + SOON_RETRY_AFTER_S - 1 <= when <= time.time() + SOON_RETRY_AFTER_S + 1
    assert client.get_url(soon).status_code == 200  # only the first request is refused
    for _ in range(2):
        r = client.get_url(later)
        assert r.status_code == 429
        when = parsedate_to_datetime(r.headers["retry-after"]).timestamp()
        assert when - time.time() > LONG_RETRY_AFTER_S - 5


def test_slow_host_answers_late_and_the_log_shows_it(demo, client, hosts):
    h = hosts["slow_host"]
    demo.access_log.clear()
    for url in (h.home + "robots.txt", h.home, h.urls[0]):
        assert client.get_url(url).status_code == 200
    assert demo.access_log.wait_for(3)
    rows = [r for r in demo.access_log.rows if r.host == h.hostname]
    assert len(rows) == 3 and all(r.end - r.start >= SLOW_RESPONSE_S for r in rows)
    assert h.config["response_s"] == SLOW_RESPONSE_S


def test_robots_txt_redirected_to_a_host_with_crawl_delay_2_carries_it(client, hosts):
    h, rules = hosts["robots_far_delay"], hosts["far_rules"]
    r = client.get_url(h.home + "robots.txt")
    assert r.status_code == 301 and r.headers["location"] == h.config["robots_location"]
    assert urlsplit(r.headers["location"]).hostname == rules.hostname == h.config["robots_host"]
    text = client.get_url(r.headers["location"]).text
    assert f"Crawl-delay: {FAR_CRAWL_DELAY_S}\n" in text and robots_of(text).crawl_delay("recrawl") == 2
    assert all(client.get_url(u).status_code == 200 for u in h.urls + rules.urls)


def test_the_busy_host_logs_each_answers_end_late(demo, client, hosts):
    h = hosts["busy_host"]
    demo.access_log.clear()
    assert client.get_url(h.urls[0]).status_code == 200
    assert demo.access_log.wait_for(1)
    (row,) = [r for r in demo.access_log.rows if r.host == h.hostname]
    # (the answer itself is immediate: the end is stamped late, not sent late)
    assert row.end - row.start >= BUSY_LOGGED_LATE_S
    assert h.config["logged_late_s"] == BUSY_LOGGED_LATE_S


def test_counters_start_fresh_for_every_server_run():
    web = DemoWeb(hosts=1, politeness=True)
    soon = "/soon.html"
    assert web.respond("retry-after-date.demo.test", soon).status == 503
    assert web.respond("retry-after-date.demo.test", soon).status == 200
    assert web.with_fresh_state().respond("retry-after-date.demo.test", soon).status == 503


def test_cli_seeds_and_serve_with_politeness_hosts(demoweb_cli):
    out = demoweb_cli("seeds", "--port", "8471", "--hosts", "1", "--politeness").stdout.splitlines()
    assert out == ["http://h0000.demo.test:8471/"] + [
        f"http://{label}.demo.test:8471/" for label in KINDS.values()]
    with DemoWebProcess(hosts=1, pages_per_host=2, politeness=True) as server:
        assert server.ready_line.endswith(f"hosts=1 politeness={len(KINDS)}"), server.ready_line
        with httpx.Client(trust_env=False, timeout=5) as c:
            r = c.get(f"http://{server.address}/go/0.html", headers={"Host": "cross-redirect.demo.test"})
        assert r.status_code == 301
        assert r.headers["location"] == f"http://redirect-target.demo.test:{server.port}/page/0.html"
