"""Exploration with a bound: URLs still on their pool's prior are revisited on purpose, where a
revisit teaches the pool most, within settings.exploration_share of the budget."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import date, datetime, timedelta, timezone

import numpy as np
import pyarrow as pa

from crawl_assets.crawler.settings import CrawlSettings
from crawl_assets.crawler.vocabulary import StatusClass
from crawl_assets.pipeline.priorities.priorities_step import recrawl_priorities

PLAN_DAY = date(2026, 5, 1)
MIDNIGHT = datetime(2026, 5, 1, tzinfo=timezone.utc)


def pool(host: str, pattern: str, n: int, rate: float, days_ago: float, on_prior: bool) -> list[dict]:
    stamp = MIDNIGHT - timedelta(days=days_ago)
    return [{"url": f"https://{host}/{pattern}/{i}", "host": host, "url_pattern": f"{host}/{pattern}/9",
             "change_rate": rate, "last_visit_at": stamp, "last_fetched_at": stamp, "last_status": 200,
             "last_status_class": StatusClass.OK.value, "gone_streak": 0, "pending_change": False,
             "on_prior": on_prior} for i in range(n)]


def stats_and_inlinks():
    rows = (pool("a.test", "p", 50, 0.01, 2, True)  # looks slow, nothing learnt yet: 50 URLs of importance 1
            + pool("a.test", "q", 50, 0.01, 2, True)  # the same, importance 3 each (2 in-links)
            + pool("a.test", "s", 30, 0.01, 2, True)  # importance 3, but 10 URLs have taught the pool
            + [dict(r, url=r["url"] + "-taught") for r in pool("a.test", "s", 10, 0.01, 2, False)]
            + pool("b.test", "x", 500, 1.0, 1, False))  # changes daily: what the budget is for
    stats = pa.Table.from_pylist(rows).cast(pa.schema([
        ("url", pa.string()), ("host", pa.string()), ("url_pattern", pa.string()), ("change_rate", pa.float64()),
        ("last_visit_at", pa.timestamp("us", tz="UTC")), ("last_fetched_at", pa.timestamp("us", tz="UTC")),
        ("last_status", pa.int32()), ("last_status_class", pa.string()), ("gone_streak", pa.int64()),
        ("pending_change", pa.bool_()), ("on_prior", pa.bool_())]))
    urls = stats["url"].to_pylist()
    inlinks = pa.table({"url": urls, "inlinks": [0 if "/p/" in u or "b.test" in u else 2 for u in urls]})
    return stats, inlinks


def test_urls_on_their_pools_prior_are_revisited_where_that_teaches_the_pool_most():
    stats, inlinks = stats_and_inlinks()
    known = stats.select(["url", "host"])
    config = replace(CrawlSettings(), daily_fetch_budget=100, exploration_share=0.1, max_pages_per_host=1000)
    result = recrawl_priorities(stats, inlinks, None, known, PLAN_DAY, config)
    planned = Counter(r["url"].rsplit("/", 2)[-2] for r in result.urls.to_pylist() if r["planned"])
    # 10 revisits (10 % of 100), by W / (n + j): pool q (importance 150 on the prior, nothing
    # learnt) scores 150, 75, 50, 37.5, 30, 25, 21.4, 18.8; pool p (50) 50, 25; pool s (90, 10
    # URLs taught) 90 / 11 at best: none. The other 90 fetches go to the daily-changing pages.
    assert result.counts.explored == 10
    assert planned == {"q": 8, "p": 2, "x": 90}
    # Without a share, nothing is explored: the slow-looking pools wait their turn by gain.
    none = recrawl_priorities(stats, inlinks, None, known, PLAN_DAY, replace(config, exploration_share=0.0))
    assert none.counts.explored == 0
    assert Counter(r["url"].rsplit("/", 2)[-2] for r in none.urls.to_pylist() if r["planned"]) == {"x": 100}


def test_a_url_visited_on_the_plans_day_is_not_explored_and_a_table_without_on_prior_explores_nothing():
    stats, inlinks = stats_and_inlinks()
    known = stats.select(["url", "host"])
    config = replace(CrawlSettings(), daily_fetch_budget=100, exploration_share=0.1, max_pages_per_host=1000)
    # the plan is made for the day the pools were visited: nothing to learn yet
    same_day = recrawl_priorities(stats, inlinks, None, known, (MIDNIGHT - timedelta(days=2)).date(), config)
    assert same_day.counts.explored == 0
    plain = recrawl_priorities(stats.drop_columns(["on_prior", "url_pattern"]), inlinks, None, known, PLAN_DAY,
                               config)
    assert plain.counts.explored == 0 and plain.counts.planned == 100
    assert np.isclose(plain.counts.budget, 100)
