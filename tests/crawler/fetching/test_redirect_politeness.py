"""Every request takes the slot of the host it goes to, redirects included, judged from the
demo web's own access log (the politeness hosts of demoweb/special_hosts/politeness_hosts.py)."""

import dataclasses
import ipaddress

import pytest

from crawl_assets.crawler.batches.batch import run_fetch_batch
from crawl_assets.crawler.fetching.workbench import FetchTask
from crawl_assets.crawler.settings import NetworkException, load_settings
from crawl_assets.crawler.vocabulary import DropReason, StatusClass
from demoweb.special_hosts.politeness_hosts import (MOVED_CRAWL_DELAY_S, MOVED_ROBOTS_PATH, ROBOTS_CHAIN_HOPS,
                                                   TARGET_CRAWL_DELAY_S, politeness_hostname)
from support import DemoWebProcess, assert_polite, requests_by_host

DELAY = 0.05
BUDGET = 6  # pages per host: redirect-target is offered more than this (cross-redirect exactly this)
# The demo web stamps a request's `end` after its write returns; on a loaded machine that can
# land several ms after the crawler already holds the answer, so measured gaps get this slack
# (far below what the tests tell apart: a hop fetched outside the slot came 11 ms after the
# host's own robots.txt, against a 0.25 s delay).
STAMP_SLACK_S = 0.010

TARGET = politeness_hostname("redirect_target")
ELSEWHERE = politeness_hostname("robots_cross_host")
CROSS = politeness_hostname("cross_host_redirect")
MOVED = politeness_hostname("robots_same_host")
CHAIN = politeness_hostname("robots_redirect_chain")
BAD = politeness_hostname("robots_bad_location")


def settings():
    return dataclasses.replace(
        load_settings(use_env=False), default_delay_s=DELAY, max_pages_per_host=BUDGET, max_depth=1,
        shard_count=1, resolver_overrides={"*.demo.test": "127.0.0.1"},
        network_exceptions=(NetworkException(("*.demo.test",), (ipaddress.ip_network("127.0.0.0/8"),)),),
        host_scope=("*.demo.test",))


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """One batch over the redirecting hosts and the host they redirect to, all at once."""
    with DemoWebProcess(hosts=1, pages_per_host=1, politeness=True) as server:
        hosts = {h.hostname: h for h in server.web.politeness_hosts()}
        seeds = [hosts[TARGET].home, hosts[ELSEWHERE].home, *hosts[ELSEWHERE].urls, *hosts[CROSS].urls,
                 *hosts[MOVED].urls, *hosts[CHAIN].urls, *hosts[BAD].urls]
        result = run_fetch_batch(settings(), 0, [FetchTask.for_url(u) for u in seeds],
                                 tmp_path_factory.mktemp("warc"), "t")
        rows = server.stop()
    log = requests_by_host(rows)
    records = {r.url: r for r in result.output.records}
    return hosts, log, records, result.output


def assert_spaced(hits, delay_s):
    """assert_polite (never two in flight, never closer than delay_s) less the stamp slack."""
    assert_polite(hits, delay_s - STAMP_SLACK_S)


def test_a_robots_txt_redirect_to_another_host_is_fetched_in_that_hosts_slot(batch):
    hosts, log, records, _ = batch
    target = log[TARGET]
    # Two robots.txt requests reach the target: its own and the hop of robots-elsewhere's.
    assert [r["path"] for r in target].count("/robots.txt") == 2
    # Its own robots.txt comes first; from then on its Crawl-delay holds for every request,
    # the hop of robots-elsewhere's robots.txt included: the hop waited for the target's turn.
    assert target[0]["path"] == "/robots.txt"
    assert_spaced(target, TARGET_CRAWL_DELAY_S)
    # The redirected rules hold for robots-elsewhere, Crawl-delay included.
    page, blocked = hosts[ELSEWHERE].urls
    assert records[page].status_class == StatusClass.OK
    assert records[blocked].status_class == StatusClass.ROBOTS_DISALLOWED
    paths = [r["path"] for r in log[ELSEWHERE]]
    assert paths[0] == "/robots.txt" and sorted(paths[1:]) == ["/", "/page.html"]
    assert_spaced(log[ELSEWHERE], TARGET_CRAWL_DELAY_S)


def test_a_page_redirect_to_another_host_waits_for_its_robots_delay_and_budget(batch):
    hosts, log, records, output = batch
    target = log[TARGET]
    assert target[0]["path"] == "/robots.txt"  # the target's rules come before any page of it
    for url in hosts[CROSS].urls:
        assert records[url].status_class == StatusClass.REDIRECT
        assert records[url].redirect_to.startswith(f"http://{TARGET}:")
    # The budget holds over seeds, links and redirect targets together; the rest is counted.
    target_pages = [r for r in target if "robots" not in r["path"]]
    assert len(target_pages) == BUDGET
    assert output.dropped[TARGET][DropReason.HOST_BUDGET] > 0
    fetched = {r.url for r in records.values() if r.host == TARGET and r.status_class == StatusClass.OK}
    assert len(fetched) == BUDGET
    assert_spaced(target, TARGET_CRAWL_DELAY_S)  # its Crawl-delay, one request at a time


def test_a_same_host_robots_redirect_is_a_request_of_its_own_and_its_rules_apply(batch):
    hosts, log, records, _ = batch
    page, private = hosts[MOVED].urls
    assert records[page].status_class == StatusClass.OK
    assert records[private].status_class == StatusClass.ROBOTS_DISALLOWED
    paths = [r["path"] for r in log[MOVED]]
    assert paths[:2] == ["/robots.txt", MOVED_ROBOTS_PATH] and "/page.html" in paths[2:]
    assert "/private/x.html" not in paths
    assert_spaced(log[MOVED][:2], DELAY)  # the hop waited for the host's delay
    assert_spaced(log[MOVED][1:], MOVED_CRAWL_DELAY_S)  # then its Crawl-delay held


def test_more_than_five_robots_redirects_make_the_host_unreachable(batch):
    hosts, log, records, _ = batch
    assert ROBOTS_CHAIN_HOPS == 6
    # robots.txt and five hops were asked, the sixth hop and every page never.
    assert [r["path"] for r in log[CHAIN]] == ["/robots.txt"] + [f"/robots/{n}.txt" for n in range(1, 6)]
    assert_spaced(log[CHAIN], DELAY)
    for url in hosts[CHAIN].urls:
        assert records[url].status_class == StatusClass.ROBOTS_UNAVAILABLE
        assert records[url].error == "robots.txt: more than 5 redirects"


def test_a_robots_redirect_to_an_unparsable_location_makes_the_host_unreachable(batch):
    hosts, log, records, _ = batch
    assert [r["path"] for r in log[BAD]] == ["/robots.txt"]
    for url in hosts[BAD].urls:
        assert records[url].status_class == StatusClass.ROBOTS_UNAVAILABLE
        assert records[url].error.startswith("robots.txt: unusable redirect target")
