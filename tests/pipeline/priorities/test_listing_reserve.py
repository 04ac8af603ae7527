"""Cheap signals first: the sitemaps and feeds of hosts whose dates are trusted are read first
each day, within settings.listing_reserve_share of the budget, and a page they date after our
copy is fetched the day after it was read (change_stats' pending_change, recrawl_priorities'
plan), from small fetch logs and sitemap entries."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pyarrow as pa

from crawl_assets.crawler.settings import CrawlSettings
from crawl_assets.pipeline.change_stats.change_evidence import (CHANGE_EVIDENCE_SCHEMA, listed_copies,
                                                                trusted_change_evidence, weigh_listings)
from crawl_assets.pipeline.change_stats.change_stats_step import change_stats
from crawl_assets.pipeline.priorities.priorities_step import recrawl_priorities
from crawl_assets.pipeline.fetch_step import same_day_allowance
from crawl_assets.storage.layout import change_evidence_file, frontier_file, priorities_file, write_parquet_atomic

from crawl_files import fetch_row, write_fetch_log

DAY1, DAY2, PLAN_DAY = "2026-03-01", "2026-03-02", "2026-03-03"
START = datetime(2026, 3, 1, 6, tzinfo=timezone.utc)
HONEST, LIAR = "honest.test", "liar.test"
PAGES = 6
# Three fetches a day, one of them the listings' reserve; every page dated after our copy is due.
SETTINGS = replace(CrawlSettings(), daily_fetch_budget=3, discovery_share=0.0, listing_reserve_share=0.34)


def sitemap(host: str) -> str:
    return f"http://{host}/sitemap.xml"


def page(host: str, i: int) -> str:
    return f"http://{host}/{i}"


def entries(host: str, lastmods: list[datetime], observed: datetime) -> list[dict]:
    return [{"url": page(host, i), "host": host, "lastmod": when, "source": sitemap(host), "source_kind": "sitemap",
             "observed_at": observed} for i, when in enumerate(lastmods)]


def crawl(root) -> object:
    """Day 1: every page and both sitemaps (the liar's dates all say "now"); day 2: the honest
    sitemap again, which dates pages 3, 4 and 5 after our copies of day 1. Returns day 2's state."""
    urls = [u for h in (HONEST, LIAR) for u in (sitemap(h), *(page(h, i) for i in range(PAGES)))]
    write_fetch_log(root, DAY1, [fetch_row(u, START, sha256=u, payload_digest=u, change_digest=u, simhash=7)
                                 for u in urls])
    past = [START - timedelta(days=30 + i) for i in range(PAGES)]
    day1 = entries(HONEST, past, START) + entries(LIAR, [START] * PAGES, START)
    later = START + timedelta(days=1)
    moved = past[:3] + [later - timedelta(hours=5)] * 3
    day2 = entries(HONEST, moved, later)
    write_fetch_log(root, DAY2, [fetch_row(sitemap(HONEST), later, sha256="v2", payload_digest="v2",
                                           change_digest="v2", simhash=9)])
    for date, rows in ((DAY1, day1), (DAY2, day2)):
        write_parquet_atomic(pa.Table.from_pylist(rows, schema=CHANGE_EVIDENCE_SCHEMA),
                             change_evidence_file(root, date, "s00"))
    state = None
    for date in (DAY1, DAY2):
        state = change_stats(str(root / "fetch_log" / f"date={date}" / "*" / "*.parquet"), date, SETTINGS,
                             lastmod_evidence=trusted_change_evidence(root, date), previous=state,
                             state_root=root).state
    return state


def known(root) -> pa.Table:
    urls = sorted(u for h in (HONEST, LIAR) for u in (sitemap(h), *(page(h, i) for i in range(PAGES))))
    table = pa.table({"url": urls, "host": [u.split("/")[2] for u in urls], "inlinks": pa.array([0] * len(urls))})
    return weigh_listings(table, root, DAY2)


def test_a_trusted_sitemap_is_read_first_and_the_changes_it_dates_are_fetched_the_day_after(tmp_path):
    state = crawl(tmp_path)
    urls = known(tmp_path)
    listing = dict(zip(urls["url"].to_pylist(), urls["listing"].to_pylist()))
    assert [u for u, is_listing in listing.items() if is_listing] == [sitemap(HONEST)]  # not the liar's
    priorities = recrawl_priorities(state, None, None, urls, PLAN_DAY, SETTINGS)
    assert priorities.counts.listings_planned == 1
    plan = {r["url"]: r for r in priorities.urls.to_pylist()}
    planned = sorted((r["plan_rank"], u) for u, r in plan.items() if r["planned"])
    # The honest sitemap first (its reserve), then two of the three pages it dated after our copy.
    assert planned[0] == (1, sitemap(HONEST))
    assert len(planned) == 3 and {u for _, u in planned[1:]} <= {page(HONEST, i) for i in (3, 4, 5)}
    assert all(plan[page(HONEST, i)]["due"] for i in (3, 4, 5))
    assert not any(plan[page(HONEST, i)]["due"] for i in (0, 1, 2))
    # The fetch batch of a day compares what the sitemaps it reads date with our copies: the
    # trusted host's listed pages, as last fetched with content (fetching/dated_refresh.py).
    copies = listed_copies(tmp_path, DAY2, lambda host: True)
    assert copies == {page(HONEST, i): START for i in range(PAGES)}
    assert listed_copies(tmp_path, DAY2, lambda host: host != HONEST) == {}
    # They take what the day's budget leaves: nothing here (three planned of three); with a
    # budget of 21, the 18 fetches the plan left, in the shard's part of the plan (one of three).
    recrawl_priorities(state, None, None, urls, PLAN_DAY, SETTINGS, urls_out=priorities_file(tmp_path, DAY2))
    write_parquet_atomic(pa.table({"url": ["x"]}), frontier_file(tmp_path, PLAN_DAY, "s00"))
    assert same_day_allowance(tmp_path, PLAN_DAY, "s00", SETTINGS) == 0
    assert same_day_allowance(tmp_path, PLAN_DAY, "s00", replace(SETTINGS, daily_fetch_budget=21)) == 6
    # Without a reserve the sitemap waits behind the due pages.
    plan = recrawl_priorities(state, None, None, urls, PLAN_DAY,
                              replace(SETTINGS, listing_reserve_share=0.0)).urls.to_pylist()
    assert sorted(r["url"] for r in plan if r["planned"]) == [page(HONEST, i) for i in (3, 4, 5)]
