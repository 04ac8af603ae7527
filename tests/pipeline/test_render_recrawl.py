"""The render tier on recrawl days, through the Dagster-free steps: spa-json (the demo web's
single-page app whose content comes from a JSON endpoint) crawled on days 3, 4 and 5 of the
web's clock, each day's frontier made by the frontier step from the fetch logs before it. Its
shells answer the same bytes every day (and a 304 to their ETag); the daily article's JSON
text is new each day. Day 4 renders every page again (asked for without validators, the
shells archived as revisits), the host, remembered in the tier, is decided again on all its
pages, and change_stats counts the daily article changed and no other page: the rendered DOM
is compared, not the shell. Day 5 runs on two shards with a daily render budget of three
pages: the host's shard gets two of them (a shard's part, rounded up), which leave the others'
shells unrendered: their rows carry no SimHash or change digest, so no change of view is counted
as a change of the page. What the pages' script loads is asked for once a day and archived
once: the script (cacheable for an hour) is served again to the day's other renders without a
request, and on day 4 its payload, archived on day 3, is written as a revisit. Loopback only;
one chromium start a day."""

import dataclasses
import ipaddress
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl_assets.crawler.settings import NetworkException
from crawl_assets.crawler.url_policy.sharding import shard_key, shard_of
from crawl_assets.crawler.vocabulary import StatusClass, WarcRecordKind
from crawl_assets.pipeline.change_stats.change_stats_step import change_stats
from crawl_assets.pipeline.crawl_history import history_before
from crawl_assets.pipeline.fetch_step import FetchInputs, load_archived_payloads, load_render_memory, run_fetch_step
from crawl_assets.pipeline.frontier_step import build_frontier
from crawl_assets.storage.layout import (
    fetch_log_file, glob_of, links_file, render_decisions_file, warc_dir, write_parquet_atomic,
)
from crawl_files import settings_for, write_seeds
from support import assert_polite
from demoweb import DemoWebProcess
from demoweb.special_hosts.spa_hosts import CRAWL_DELAY_S, DAILY_ARTICLE, spa_hosts
from pywb_support import free_port

if not Path("/usr/bin/chromium").exists():
    pytest.skip("/usr/bin/chromium is missing (make system-packages installs it)", allow_module_level=True)
pytest.importorskip("playwright.async_api")

DAYS = {"2026-11-04": 3, "2026-11-05": 4, "2026-11-06": 5}  # date -> the demo web's day
RECRAWL, SHORT_BUDGET = "2026-11-05", "2026-11-06"  # the day with a render budget short of the pages
SHARDS, DAILY_RENDER_BUDGET, SHARD_RENDER_BUDGET = 2, 3, 2  # that day: 3 pages over 2 shards, 2 a shard


@pytest.fixture(scope="module")
def crawled_days(tmp_path_factory):
    root = tmp_path_factory.mktemp("root")
    settings = settings_for(
        root, default_delay_s=0.05, shard_count=1, max_pages_per_host=100, response_time_factor=0.0,
        resolver_overrides={"*.demo.test": "127.0.0.1"}, host_scope=("spa-json.demo.test",),
        network_exceptions=(NetworkException(("*.demo.test",), (ipaddress.ip_network("127.0.0.0/8"),)),),
        render_hosts=("auto",), render_pool_size=2)
    port, results, requests = free_port(), {}, {}
    for date, day in DAYS.items():
        if date == SHORT_BUDGET:
            settings = dataclasses.replace(settings, render_daily_budget=DAILY_RENDER_BUDGET, shard_count=SHARDS)
        with DemoWebProcess(port=port, seed=3, hosts=1, pages_per_host=2, spa=True, day=day) as server:
            host = next(h for h in spa_hosts(server.web) if h.kind == "json")
            if not results:
                write_seeds(root, [host.home])
            shard = shard_key(shard_of(host.hostname, settings.shard_count))
            frontier = build_frontier(settings, history_before(root, date)).table
            inputs = FetchInputs(frontier, archived_payloads=load_archived_payloads(root, date),
                                 render_memory=load_render_memory(root, date, settings))
            results[date] = run_fetch_step(settings, shard, inputs, warc_dir(root, date, shard), date)
            requests[date] = server.stop()
        write_parquet_atomic(results[date].fetch_log, fetch_log_file(root, date, shard))
        write_parquet_atomic(results[date].links, links_file(root, date, shard))
        write_parquet_atomic(results[date].render_decisions, render_decisions_file(root, date, shard))
    stats = {date: {r["url"]: r for r in change_stats(glob_of(root, "fetch_log"), date, settings).urls.to_pylist()}
             for date in (RECRAWL, SHORT_BUDGET)}
    return host, results, requests, stats


def logs(crawled_days):
    _, results, _, _ = crawled_days
    return [{r["url"]: r for r in results[date].fetch_log.to_pylist()} for date in DAYS]


def test_the_recrawl_renders_every_page_again_its_shells_archived_as_revisits(crawled_days):
    host, results, requests, _ = crawled_days
    first, second, _ = logs(crawled_days)
    assert set(first) >= set(host.pages) and set(second) >= set(host.pages)
    for url in host.pages:
        assert (first[url]["rendered"], second[url]["rendered"]) == (True, True), url
        assert second[url]["status_class"] == StatusClass.OK  # asked unconditionally: no 304
        assert second[url]["warc_type"] == WarcRecordKind.REVISIT  # the same shell as day 3's
        assert second[url]["outlinks"] == first[url]["outlinks"]  # the rendered DOM's links again
    assert second[host.home]["outlinks"] == 2  # the shells have none
    day4 = [r for r in requests[RECRAWL] if r["path"].startswith("/api/pages/")]
    assert len(day4) == len(host.pages)  # each page's content loaded again by its script
    first_day, recrawl = ({r["host"]: r for r in results[d].render_decisions.to_pylist()}[host.hostname]
                          for d in (min(DAYS), RECRAWL))
    assert (first_day["decision"], first_day["pages_sampled"]) == ("render", 3)  # a sample, then the rest
    # Remembered in the tier: every page rendered at once, and the host decided again on all of them.
    assert (recrawl["decision"], recrawl["pages_sampled"]) == ("render", len(host.pages))
    assert recrawl["rendered_links"] > recrawl["plain_links"]


def test_the_rendered_dom_is_compared_so_only_the_daily_article_changed(crawled_days):
    host, _, _, stats = crawled_days
    stats = stats[RECRAWL]
    first, second, _ = logs(crawled_days)
    daily = host.home + DAILY_ARTICLE.lstrip("/")
    assert first[daily]["payload_digest"] == second[daily]["payload_digest"]  # the shell
    assert first[daily]["change_digest"] != second[daily]["change_digest"]
    assert [u for u in host.pages if u != daily and first[u]["change_digest"] != second[u]["change_digest"]] == []
    assert {u: stats[u]["changes"] for u in host.pages} == {u: int(u == daily) for u in host.pages}
    assert stats[daily]["boilerplate_changes"] == 0  # its text moved, as the SimHash tells
    assert stats[daily]["visits"] == 2


def test_shells_the_render_budget_leaves_are_not_compared_with_rendered_pages(crawled_days):
    host, results, _, stats = crawled_days
    third = logs(crawled_days)[2]
    assert results[SHORT_BUDGET].counts.rendered_pages == SHARD_RENDER_BUDGET
    assert results[SHORT_BUDGET].counts.left_unrendered == len(host.pages) - SHARD_RENDER_BUDGET
    left = [u for u in host.pages if not third[u]["rendered"]]
    assert len(left) == len(host.pages) - SHARD_RENDER_BUDGET
    assert all(third[u]["simhash"] is None and third[u]["change_digest"] is None for u in left)
    assert all(third[u]["payload_digest"] and third[u]["status_class"] == StatusClass.OK for u in left)
    daily = host.home + DAILY_ARTICLE.lstrip("/")
    # A shell against the DOM of day 4 would be a change of every page left unrendered.
    expected = {u: int(u == daily) + int(u == daily and third[u]["rendered"]) for u in host.pages}
    assert {u: stats[SHORT_BUDGET][u]["changes"] for u in host.pages} == expected


def warc_records(results, date: str) -> list[tuple[str, str, str | None, str | None, str]]:
    """(type, URI, WARC-Refers-To-Target-URI, WARC-Refers-To-Date, WARC-Date) of the day's WARC records."""
    found = []
    for path in results[date].warc_files:
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                headers = record.rec_headers
                found.append((record.rec_type, headers.get_header("WARC-Target-URI"),
                              headers.get_header("WARC-Refers-To-Target-URI"), headers.get_header("WARC-Refers-To-Date"),
                              headers.get_header("WARC-Date")))
    return found


def test_the_pages_script_is_asked_for_once_a_day_and_archived_once(crawled_days):
    host, results, requests, _ = crawled_days
    app = host.home + "static/app.js"
    for date in DAYS:
        asked = [r for r in requests[date] if r["path"] == "/static/app.js"]
        assert len(asked) == 1, date  # one request a day, however many pages load it
        counts = results[date].counts
        assert counts.subresources_from_cache == counts.rendered_pages - 1  # every other render's
        assert_polite(requests[date], 0.05, {host.hostname: CRAWL_DELAY_S})
    first, second = (warc_records(results, d) for d in (min(DAYS), RECRAWL))
    ((kind, _, _, _, archived_at),) = [r for r in first if r[1] == app and r[0] in ("response", "revisit")]
    assert kind == "response"
    ((kind, _, refers_to, refers_date, _),) = [r for r in second if r[1] == app and r[0] in ("response", "revisit")]
    assert (kind, refers_to, refers_date) == ("revisit", app, archived_at)
    # each page's JSON has no caching headers: asked for on every render, a revisit when unchanged
    json_asked = [r for r in requests[RECRAWL] if r["path"].startswith("/api/pages/")]
    assert len(json_asked) == len(host.pages)
