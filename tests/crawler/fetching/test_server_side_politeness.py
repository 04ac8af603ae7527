"""Politeness as the server sees it: every gap in the demo web's own access log (the previous
answer's end to the next request's start, per host) is at least the host's delay, for a
Crawl-delay learnt through a robots.txt redirect to another host (a long one, and one below the
default delay), and on a busy host whose log stamps each answer's end after the crawler already
has it. Each of those waits holds the engine's margin (politeness.py) beside the delay."""

import dataclasses
import ipaddress

import pytest

from crawl_assets.crawler.batches.batch import run_fetch_batch
from crawl_assets.crawler.fetching.workbench import FetchTask
from crawl_assets.crawler.settings import NetworkException, load_settings
from crawl_assets.crawler.vocabulary import StatusClass
from demoweb.special_hosts.politeness_hosts import (BUSY_LOGGED_LATE_S, FAR_CRAWL_DELAY_S, TARGET_CRAWL_DELAY_S,
                                                   politeness_hostname)
from support import DemoWebProcess, assert_polite, requests_by_host

DELAY = 0.4
FAR = politeness_hostname("robots_far_delay")
RULES = politeness_hostname("far_rules")
BUSY = politeness_hostname("busy_host")
SHORT = politeness_hostname("robots_cross_host")  # its robots.txt redirects to redirect-target's
SHORT_RULES = politeness_hostname("redirect_target")  # Crawl-delay 0.2: below DELAY


def settings():
    return dataclasses.replace(
        load_settings(use_env=False), default_delay_s=DELAY, max_depth=0, shard_count=1,
        resolver_overrides={"*.demo.test": "127.0.0.1"}, host_scope=("*.demo.test",),
        network_exceptions=(NetworkException(("*.demo.test",), (ipaddress.ip_network("127.0.0.0/8"),)),))


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """One batch: the page of the host whose robots.txt lives on far-rules (never asked
    before, so the hop goes at once), the pages of the one whose robots.txt lives on
    redirect-target, and the busy host's pages."""
    # The trap defences import datasketch at the first new link; imported in the batch, its
    # seconds would stall every host's timing (and could hide a short gap).
    import datasketch  # noqa: F401
    with DemoWebProcess(hosts=1, pages_per_host=1, politeness=True) as server:
        hosts = {h.hostname: h for h in server.web.politeness_hosts()}
        seeds = [*hosts[FAR].urls, hosts[SHORT].home, *hosts[SHORT].urls, *hosts[BUSY].urls]
        result = run_fetch_batch(settings(), 0, [FetchTask.for_url(u) for u in seeds],
                                 tmp_path_factory.mktemp("warc"), "t")
        rows = server.stop()
    log = requests_by_host(rows)
    return hosts, log, {r.url: r for r in result.output.records}, rows


def test_a_crawl_delay_learnt_through_a_robots_redirect_spaces_the_first_page(batch):
    hosts, log, records, rows = batch
    assert [r["path"] for r in log[FAR]] == ["/robots.txt", "/page.html"]
    assert [r["path"] for r in log[RULES]] == ["/robots.txt"]  # the hop, which said Crawl-delay 2
    robots, page = log[FAR]
    assert page["start"] - robots["end"] >= FAR_CRAWL_DELAY_S
    assert records[hosts[FAR].urls[0]].status_class == StatusClass.OK


# Every wait is 10 % longer than the delay (politeness.py, written here as the number it must be).
MARGIN = 0.1


def margin_kept(gap_s: float, delay_s: float) -> bool:
    """The gap holds the delay and at least half its margin (the other half: room for the
    server's end stamp, late by a few ms on a loaded machine)."""
    return gap_s >= delay_s * (1 + MARGIN / 2)


def test_a_crawl_delay_learnt_through_a_robots_redirect_keeps_the_margin(batch):
    """Crawl-delay 2 learnt through the redirect: the first page waits 2 s and its margin."""
    _, log, _, _ = batch
    robots, page = log[FAR]
    assert margin_kept(page["start"] - robots["end"], FAR_CRAWL_DELAY_S), page["start"] - robots["end"]


def test_a_learnt_crawl_delay_below_the_default_leaves_the_default_and_its_margin(batch):
    """A Crawl-delay (0.2 s) below the default delay (0.4 s), learnt through the redirect: the
    host's pages wait the default and its margin; the shorter Crawl-delay never shortens it."""
    hosts, log, records, _ = batch
    assert TARGET_CRAWL_DELAY_S < DELAY
    assert [r["path"] for r in log[SHORT_RULES]] == ["/robots.txt"]  # the hop
    paths = [r["path"] for r in log[SHORT]]
    assert paths[0] == "/robots.txt" and sorted(paths[1:]) == ["/", "/page.html"], paths
    page, blocked = hosts[SHORT].urls
    assert records[page].status_class == StatusClass.OK  # redirect-target's rules hold here
    assert records[blocked].status_class == StatusClass.ROBOTS_DISALLOWED
    gaps = [later["start"] - earlier["end"] for earlier, later in zip(log[SHORT], log[SHORT][1:])]
    assert all(margin_kept(gap, DELAY) for gap in gaps), gaps


def test_every_gap_the_server_logged_is_at_least_the_delay(batch):
    hosts, log, records, rows = batch
    # robots.txt and four pages: four gaps, each logged from an end stamped late.
    assert [r["path"] for r in log[BUSY]] == ["/robots.txt"] + [f"/page/{n}.html" for n in range(4)]
    assert all(records[u].status_class == StatusClass.OK for u in hosts[BUSY].urls)
    assert BUSY_LOGGED_LATE_S < 0.1 * DELAY  # within the engine's margin (politeness.py)
    assert_polite(rows, DELAY, {FAR: FAR_CRAWL_DELAY_S, RULES: FAR_CRAWL_DELAY_S})
