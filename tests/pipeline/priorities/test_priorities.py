"""recrawl_priorities and the refresh allocation: the optimum's rule, politeness caps, discovery
by value and its floor, 404/410 back-off, flagged hosts, determinism."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import replace
from datetime import date, datetime, timedelta, timezone

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawl_assets.crawler.settings import CrawlSettings
from crawl_assets.crawler.vocabulary import StatusClass
from crawl_assets.pipeline.priorities.priorities_step import Kind, recrawl_priorities
from crawl_assets.pipeline.priorities.priority_queries import KIND_CODES
from crawl_assets.pipeline.priorities.refresh_allocation import allocate, freshness
from crawl_assets.pipeline.priorities.url_schedule import due_and_gain

PLAN_DAY = date(2026, 5, 1)
MIDNIGHT = datetime(2026, 5, 1, tzinfo=timezone.utc)


def stats_table(rows):
    """A change_stats.urls table from (url, rate, days since last visit[, last_status, streak])."""
    urls, hosts, rates, visited, status, streak = [], [], [], [], [], []
    for row in rows:
        url, rate, ago, *rest = row
        urls.append(url)
        hosts.append(url.split("/")[2])
        rates.append(rate)
        visited.append(MIDNIGHT - timedelta(days=ago))
        status.append(rest[0] if rest else 200)
        streak.append(rest[1] if rest else 0)
    stamp = pa.array(visited, pa.timestamp("us", tz="UTC"))
    return pa.table({"url": urls, "host": hosts, "change_rate": pa.array(rates, pa.float64()),
                     "last_visit_at": stamp, "last_fetched_at": stamp,
                     "last_status": pa.array(status, pa.int32()), "gone_streak": pa.array(streak, pa.int64()),
                     "last_status_class": [StatusClass.OK if s == 200 else StatusClass.HTTP_4XX for s in status],
                     "pending_change": pa.array([False] * len(urls))})


def known(stats, extra=()):
    urls = stats["url"].to_pylist() + list(extra)
    return pa.table({"url": urls, "host": [u.split("/")[2] for u in urls]})


def settings(**changes):
    return replace(CrawlSettings(), **changes)


def by_url(priorities):
    return {r["url"]: r for r in priorities.urls.to_pylist()}


_WRITTEN = itertools.count()


def written_plan(tmp_path, stats, inlinks, hosts, known_urls, day, config):
    """recrawl_priorities with its URL table written to Parquet (as the asset writes it),
    checked from that file against the budget and the host caps (check_budget); returns the
    step's result and the file's rows by URL."""
    path = tmp_path / f"priorities-{next(_WRITTEN)}.parquet"
    result = recrawl_priorities(stats, inlinks, hosts, known_urls, day, config, urls_out=path)
    assert result.urls is None
    urls = pq.read_table(path)
    totals = check_budget(urls, hosts, config)
    assert (result.counts.planned, result.counts.refresh_planned, result.counts.discovery_planned,
            result.counts.gone_planned) == (totals["planned"], totals["refresh"], totals["discovery"], totals["gone"])
    return result, {r["url"]: r for r in urls.to_pylist()}, totals


def host_caps(hosts: pa.Table | None, config):
    """host -> its fetches a day as the module's docstring defines them: min(max_pages_per_host,
    86,400 / its delay, flagged_host_budget if flagged); the default delay for a host not listed."""
    listed = {} if hosts is None else {r["host"]: r for r in hosts.to_pylist()}

    def cap(host: str) -> int:
        facts = listed.get(host, {})
        cap = min(config.max_pages_per_host, math.floor(86_400 / (facts.get("delay_s") or config.default_delay_s)))
        return min(cap, config.flagged_host_budget) if facts.get("flagged") else cap
    return cap


def check_budget(urls: pa.Table, hosts: pa.Table | None, config) -> dict:
    """The plan and the allocation in a written URL table, added up here: no host planned or
    allocated past its cap, no more planned than the budget, and the frequencies of the pages
    to hold (refresh and never-fetched URLs alike) summing to the budget unless the caps and
    one fetch a URL a day leave less to spend. Returns the totals (planned, per kind, per host;
    the allocation and what it should be)."""
    rows = urls.select(["url", "host", "kind", "change_rate", "frequency", "planned"]).to_pylist()
    host_cap = host_caps(hosts, config)
    budget = config.daily_fetch_budget
    planned = [r for r in rows if r["planned"]]
    per_host = Counter(r["host"] for r in planned)
    for host, n in per_host.items():
        assert n <= host_cap(host), (host, n)
    assert len(planned) <= budget
    held = [r for r in rows if r["kind"] in (Kind.REFRESH, Kind.DISCOVERY)]
    allocated = Counter()
    for r in held:
        allocated[r["host"]] += r["frequency"]
        assert 0 <= r["frequency"] <= 1 + 1e-9
    for host, f in allocated.items():
        assert f <= host_cap(host) * (1 + 1e-4), (host, f)
    assert all(r["frequency"] == 0 for r in rows if r["kind"] == Kind.GONE)
    changing = Counter(r["host"] for r in held if r["change_rate"] > 0)
    reachable = sum(min(host_cap(h), n) for h, n in changing.items())
    to_spend = min(budget, reachable)
    # The allocation ends at or under what it may spend, and close to it: the curve it inverts
    # is tabulated (0.1 % steps of the marginal value), so pages alike in rate and weight move
    # together and the spend moves in steps (0.5 % short seen with 1,000 identical pages).
    spent = sum(allocated.values())
    assert to_spend * (1 - 0.01) <= spent <= to_spend * (1 + 1e-6) + 1e-9, (spent, to_spend)
    kinds = Counter(r["kind"] for r in planned)
    return {"planned": len(planned), "refresh": kinds[Kind.REFRESH], "discovery": kinds[Kind.DISCOVERY],
            "gone": kinds[Kind.GONE], "per_host": per_host, "allocated": spent, "to_spend": to_spend,
            "reachable": reachable}


def test_pages_changing_far_faster_than_affordable_get_fewer_fetches(tmp_path):
    # 200 pages, 10 fetches a day: each could be revisited every 20 days on average.
    rows = [(f"https://a{i % 10}.test/p/{i}", 0.05, 10) for i in range(198)]
    rows += [("https://a0.test/fast", 50.0, 10), ("https://a0.test/moderate", 0.05, 10)]
    stats = stats_table(rows)
    _, result, totals = written_plan(tmp_path, stats, None, None, known(stats), PLAN_DAY,
                                     settings(daily_fetch_budget=10, discovery_share=0))
    # The whole budget is allocated (the fast page's share goes to the others) and planned.
    assert totals["to_spend"] == 10
    assert (totals["planned"], totals["refresh"]) == (10, 10)
    fast, moderate = result["https://a0.test/fast"], result["https://a0.test/moderate"]
    assert fast["frequency"] < moderate["frequency"]
    assert fast["frequency"] == 0  # not worth chasing at all
    # Proportional allocation would do the opposite: 1,000 times the moderate page's share.


def test_simulated_days_fetch_the_moderate_page_more_often():
    rows = [(f"https://a{i % 10}.test/p/{i}", 0.05, i % 20) for i in range(198)]
    rows += [("https://a0.test/fast", 50.0, 3), ("https://a0.test/moderate", 0.05, 3)]
    last = {r[0]: r[2] for r in rows}
    rates = {r[0]: r[1] for r in rows}
    fetched = {"https://a0.test/fast": 0, "https://a0.test/moderate": 0}
    config = settings(daily_fetch_budget=10, discovery_share=0)
    for day in range(60):
        plan_day = PLAN_DAY + timedelta(days=day)
        stats = stats_table([(u, rates[u], (plan_day - PLAN_DAY).days + ago) for u, ago in last.items()])
        plan = recrawl_priorities(stats, None, None, known(stats), plan_day, config)
        totals = check_budget(plan.urls, None, config)
        assert plan.counts.planned == totals["planned"] == 10
        assert totals["to_spend"] == 10
        for url in plan.urls.filter(plan.urls["planned"])["url"].to_pylist():
            last[url] = -(day + 0.5)  # fetched during the plan day
            if url in fetched:
                fetched[url] += 1
    assert fetched["https://a0.test/fast"] < fetched["https://a0.test/moderate"]
    assert fetched["https://a0.test/moderate"] >= 1


def test_priorities_are_deterministic():
    rng = np.random.default_rng(5)
    rows = [(f"https://h{i % 7}.test/p/{i}", float(rate), float(ago))
            for i, (rate, ago) in enumerate(zip(rng.exponential(0.3, 500), rng.integers(0, 30, 500)))]
    stats = stats_table(rows)
    inlinks = pa.table({"url": stats["url"], "inlinks": rng.integers(0, 50, 500)})
    new = [f"https://h1.test/new/{i}" for i in range(40)]
    config = settings(daily_fetch_budget=60)
    first = recrawl_priorities(stats, inlinks, None, known(stats, new), PLAN_DAY, config)
    second = recrawl_priorities(stats, inlinks, None, known(stats, new), PLAN_DAY, config)
    assert first.urls.equals(second.urls)
    # 60 fetches, allocated over the 540 pages: the 40 new URLs (no in-links) lose to the
    # stale copies of pages with up to 50 in-links, all but the discovery floor (all of them
    # in discovery_days = 1, but at most half the budget: 30).
    totals = check_budget(first.urls, None, config)
    assert (totals["planned"], totals["discovery"], totals["refresh"]) == (60, 30, 30)
    assert totals["to_spend"] == 60
    assert first.urls["url"].to_pylist() == sorted(first.urls["url"].to_pylist())
    levels = first.urls.filter(first.urls["planned"])["level"].to_pylist()
    assert set(levels) == set(range(1, len(config.priority_weights) + 1))


def test_politeness_caps_a_host_at_86400_over_its_delay(tmp_path):
    # Unconstrained, the optimum would give the slow host's pages far more than 24 a day.
    rows = [(f"https://slow.test/p/{i}", 0.2, 5) for i in range(100)]
    rows += [(f"https://fast.test/p/{i}", 0.01, 5) for i in range(100)]
    stats = stats_table(rows)
    hosts = pa.table({"host": ["slow.test", "fast.test"], "delay_s": [3600.0, 1.0], "flagged": [False, False]})
    result, by_url_, totals = written_plan(tmp_path, stats, None, hosts, known(stats), PLAN_DAY,
                                           settings(daily_fetch_budget=150, discovery_share=0))
    rows = list(by_url_.values())
    # What the caps leave of the 150: 24 for the slow host, one a day for each of the other's 100.
    assert totals["per_host"] == {"slow.test": 24, "fast.test": 100}
    assert totals["to_spend"] == totals["reachable"] == 124
    slow = [r for r in rows if r["host"] == "slow.test"]
    assert sum(r["planned"] for r in slow) == 86_400 // 3600
    assert sum(r["frequency"] for r in slow) == pytest.approx(24, rel=1e-3)
    assert result.counts.capped_hosts == 1
    # The other host takes each of its 100 pages at most once a day: budget is left unspent
    # rather than exceed the slow host's cap.
    assert result.counts.planned == 24 + 100


def test_flagged_host_gets_a_small_budget(tmp_path):
    rows = [(f"https://trap.test/c/{i}", 0.1, 5) for i in range(300)]
    rows += [(f"https://ok.test/p/{i}", 0.1, 5) for i in range(300)]
    stats = stats_table(rows)
    hosts = pa.table({"host": ["trap.test"], "delay_s": [1.0], "flagged": [True]})
    config = settings(daily_fetch_budget=200, flagged_host_budget=10, max_pages_per_host=1000)
    result, by_url_, totals = written_plan(tmp_path, stats, None, hosts, known(stats), PLAN_DAY, config)
    rows = list(by_url_.values())
    # No new URL: the whole budget is the refresh budget, spent, 190 of it on the ordinary host.
    assert totals["to_spend"] == 200
    assert totals["per_host"]["ok.test"] >= 190 and totals["planned"] == 200
    assert sum(r["frequency"] for r in rows if r["host"] == "trap.test") == pytest.approx(10, rel=1e-3)
    assert sum(r["planned"] for r in rows if r["host"] == "trap.test") <= 10
    assert result.counts.planned == 200
    unflagged = recrawl_priorities(stats, None, None, known(stats), PLAN_DAY,
                                   settings(daily_fetch_budget=200, flagged_host_budget=10))
    assert sum(r["frequency"] for r in unflagged.urls.to_pylist() if r["host"] == "trap.test") > 50


def test_on_a_web_of_mostly_unknown_pages_the_plan_takes_the_unknown_pages_first(tmp_path):
    # 200 pages fetched yesterday (a tenth a day changes), 2,000 known and never fetched: a
    # copy we do not have is stale for sure, one fetched yesterday is stale with odds of 1 in
    # 10. (The fixed fifth for discovery before gave these 300 fetches 200 refreshes and 100
    # new pages.)
    stats = stats_table([(f"https://h{i % 3}.test/p/{i}", 0.1, 1) for i in range(200)])
    new = [f"https://h{i % 3}.test/new/{i}" for i in range(2000)]
    config = settings(daily_fetch_budget=300)
    result, rows, totals = written_plan(tmp_path, stats, None, None, known(stats, new), PLAN_DAY, config)
    assert (result.counts.discovery_planned, result.counts.refresh_planned) == (300, 0)
    assert totals["to_spend"] == 300  # allocated over all 2,200 pages
    # (equal gains: in URL order, h0.test's up to its cap of 200 a day)
    assert totals["per_host"] == {"h0.test": 200, "h1.test": 100}
    gains = [r["expected_gain"] for r in rows.values()]
    best_refresh = max(r["expected_gain"] for r in rows.values() if r["kind"] == Kind.REFRESH)
    assert min(r["expected_gain"] for r in rows.values() if r["planned"]) > best_refresh
    assert len(gains) == 2200


def test_unknown_pages_get_the_discovery_floor_when_refreshes_are_worth_more(tmp_path):
    # 1,000 pages a week stale (a change a day: nearly surely stale) with 20 in-links each
    # against new pages without: refreshes are worth far more, new pages get the floor:
    # what covers them in discovery_days, at least discovery_share (5 %), at most half the
    # budget.
    stats = stats_table([(f"https://h{i % 5}.test/p/{i}", 1.0, 7) for i in range(1000)])
    inlinks = pa.table({"url": stats["url"], "inlinks": np.full(1000, 20)})
    new = [f"https://h{i % 5}.test/new/{i}" for i in range(1000)]
    for days, expected in ((1, {1000: (50, 50), 60: (50, 50), 9: (9, 91), 3: (3, 97)}),  # (the default)
                           (3, {1000: (50, 50), 60: (20, 80), 9: (5, 95), 3: (3, 97)})):
        config = settings(daily_fetch_budget=100, discovery_days=days)
        floors = {}
        for count in expected:
            result, _, _ = written_plan(tmp_path, stats, inlinks, None, known(stats, new[:count]), PLAN_DAY, config)
            floors[count] = (result.counts.discovery_planned, result.counts.refresh_planned)
        assert floors == expected, days
    none = settings(daily_fetch_budget=100, discovery_share=0.0, discovery_days=0)
    result, _, totals = written_plan(tmp_path, stats, inlinks, None, known(stats, new), PLAN_DAY, none)
    assert (result.counts.discovery_planned, result.counts.refresh_planned) == (0, 100)


def test_a_trap_host_cannot_take_the_budget_ordinary_hosts_unknown_pages_need(tmp_path):
    # A trap host knows 5,000 URLs never fetched, each linked from 5 of its pages (worth more
    # than anything else by gain); three ordinary hosts know 100 new pages each, without in-links.
    stats = stats_table([(f"https://o{i % 3}.test/p/{i}", 0.05, 1) for i in range(30)])
    trap = [f"https://trap.test/cal/{i}" for i in range(5000)]
    new = [f"https://o{i % 3}.test/new/{i}" for i in range(300)]
    inlinks = pa.table({"url": trap, "inlinks": np.full(5000, 5)})
    config = settings(daily_fetch_budget=200, flagged_host_budget=10, max_pages_per_host=150)
    flagged = pa.table({"host": ["trap.test"], "delay_s": [1.0], "flagged": [True]})
    result, rows, totals = written_plan(tmp_path, stats, inlinks, flagged, known(stats, trap + new), PLAN_DAY, config)
    # The flag holds the trap to its 10 a day; the ordinary hosts' new pages take the other 190.
    assert totals["per_host"]["trap.test"] == 10
    assert sum(n for h, n in totals["per_host"].items() if h != "trap.test") == 190
    assert sum(r["planned"] for r in rows.values() if "/new/" in r["url"]) == 190
    # Unflagged (before the day its trap defences' refusals flag it), only its host cap holds it.
    free = pa.table({"host": ["trap.test"], "delay_s": [1.0], "flagged": [False]})
    result, rows, totals = written_plan(tmp_path, stats, inlinks, free, known(stats, trap + new), PLAN_DAY, config)
    assert totals["per_host"]["trap.test"] == 150 and result.counts.planned == 200


def test_404_comes_back_on_a_growing_interval_and_410_rarely():
    stats = stats_table([("https://a.test/once", 0.1, 2, 404, 1), ("https://a.test/thrice", 0.1, 2, 404, 3),
                         ("https://a.test/often", 0.1, 2, 404, 20), ("https://a.test/gone", 0.1, 2, 410, 1),
                         ("https://a.test/ok", 0.1, 2)])
    config = settings(not_found_retry_days=7, not_found_max_days=60, gone_retry_days=365)
    plan = recrawl_priorities(stats, None, None, known(stats), PLAN_DAY, config)
    # Only the page that answered is allocated a fetch (at most one a day) and planned.
    totals = check_budget(plan.urls, None, config)
    assert (totals["to_spend"], totals["planned"], totals["gone"]) == (1, 1, 0)
    result = by_url(plan)
    fetched = PLAN_DAY - timedelta(days=2)
    assert result["https://a.test/once"]["next_due"] == fetched + timedelta(days=7)
    assert result["https://a.test/thrice"]["next_due"] == fetched + timedelta(days=28)
    assert result["https://a.test/often"]["next_due"] == fetched + timedelta(days=60)
    assert result["https://a.test/gone"]["next_due"] == fetched + timedelta(days=365)
    assert {r["kind"] for u, r in result.items() if u != "https://a.test/ok"} == {Kind.GONE}
    assert not any(r["planned"] for u, r in result.items() if u != "https://a.test/ok")
    never = by_url(recrawl_priorities(stats, None, None, known(stats), PLAN_DAY, replace(config, gone_retry_days=0)))
    assert never["https://a.test/gone"]["next_due"] is None


def test_unknown_objective_is_a_clear_error():
    stats = stats_table([("https://a.test/p", 0.1, 1)])
    with pytest.raises(ValueError, match="recrawl_objective"):
        recrawl_priorities(stats, None, None, known(stats), PLAN_DAY, settings(recrawl_objective="speed"))


def test_missing_columns_are_a_clear_error():
    stats = stats_table([("https://a.test/p", 0.1, 1)])
    with pytest.raises(ValueError, match="change_stats table lacks columns"):
        recrawl_priorities(stats.drop_columns(["change_rate"]), None, None, known(stats), PLAN_DAY, settings())


def test_a_url_known_twice_is_a_clear_error():
    stats = stats_table([("https://a.test/p", 0.1, 1)])
    with pytest.raises(ValueError, match="known_urls lists 'https://a.test/new' more than once"):
        recrawl_priorities(stats, None, None, known(stats, ["https://a.test/new"] * 2), PLAN_DAY, settings())


def test_in_links_given_with_the_known_urls_count_as_a_separate_table():
    # The asset passes the known URLs with their in-links (recrawl_inputs.known_urls); a URL
    # linked from many pages is worth more, either way the in-links come.
    rng = np.random.default_rng(9)
    rows = [(f"https://h{i % 3}.test/p/{i}", float(rate), 5.0) for i, rate in enumerate(rng.exponential(0.3, 200))]
    stats = stats_table(rows)
    links = rng.integers(0, 20, 200)
    config = settings(daily_fetch_budget=30)
    separate = recrawl_priorities(stats, pa.table({"url": stats["url"], "inlinks": links}), None, known(stats),
                                  PLAN_DAY, config)
    together = recrawl_priorities(stats, None, None, known(stats).append_column("inlinks", pa.array(links)),
                                  PLAN_DAY, config)
    none = recrawl_priorities(stats, None, None, known(stats), PLAN_DAY, config)
    assert together.urls.equals(separate.urls)
    importance = dict(zip(together.urls["url"].to_pylist(), together.urls["importance"].to_pylist()))
    assert [importance[u] for u in stats["url"].to_pylist()] == [1.0 + n for n in links]
    assert not together.urls.equals(none.urls)


def allocate_and_check_marginals(pages: int, budget: float, seed: int):
    """Allocates `budget` over random pages (one uncapped host); asserts the budget is spent,
    every page between the bounds has the same marginal freshness per fetch (the price), and
    pages left out are those whose marginal value at f -> 0 (w / λ) is below the price."""
    rng = np.random.default_rng(seed)
    rate = rng.lognormal(-2, 1.5, pages)
    weight = 1 + rng.zipf(2.0, pages)
    result = allocate(rate, weight, np.zeros(pages, int), np.array([1e9]), budget=budget)
    f = result.frequency
    assert f.sum() == pytest.approx(budget, rel=1e-4)
    inner = (f > 1e-3) & (f < 0.99)
    x = rate[inner] / f[inner]
    assert np.allclose(weight[inner] / rate[inner] * (1 - (1 + x) * np.exp(-x)), result.price, rtol=0.01)
    assert (weight[f == 0] / rate[f == 0] <= result.price * 1.001).all()
    return rate, weight, f


def test_allocation_equalises_marginal_freshness():
    rate, weight, f = allocate_and_check_marginals(5000, budget=500, seed=6)
    # The optimum beats uniform and proportional allocation of the same budget.
    value = lambda freq: (weight * freshness(rate, freq)).sum()  # noqa: E731
    uniform = np.full(5000, 0.1)
    proportional = np.minimum(rate * 500 / rate.sum(), 1)
    assert value(f) > value(uniform) > value(proportional)


def test_allocation_age_objective_gives_every_changing_page_a_share():
    rate = np.array([0.01, 0.1, 1.0, 50.0])
    result = allocate(rate, np.ones(4), np.zeros(4, int), np.array([1e9]), budget=1.0, objective="age")
    assert (result.frequency > 0).all()
    assert result.frequency.sum() == pytest.approx(1.0, rel=1e-4)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("objective", ["age", "freshness"])
def test_a_budget_of_nothing_gives_every_page_no_fetch(objective):
    """daily_fetch_budget = 0 is a valid setting: no page gets a fetch a day (under the age
    objective every finite price still gives each page a little, so the search for the price
    never ended), and the plan takes nothing."""
    rate = np.array([0.01, 0.1, 1.0, 50.0])
    result = allocate(rate, np.ones(4), np.array([0, 0, 1, 1]), np.array([1.0, 1e9]), budget=0.0, objective=objective)
    assert (result.frequency == 0).all()
    stats = stats_table([(f"https://h{i % 3}.test/{i}", float(r), 1.0) for i, r in enumerate([0.01, 0.5, 2.0] * 4)])
    urls = recrawl_priorities(stats, None, None, known(stats), PLAN_DAY,
                              settings(daily_fetch_budget=0, recrawl_objective=objective)).urls
    assert urls.num_rows == 12 and not any(urls["planned"].to_pylist())
    assert (urls["frequency"].to_numpy() == 0).all()


def test_allocation_over_many_slices_equalises_marginal_freshness():
    # 600,000 pages: the price search sums its spends over several slices, on several threads.
    allocate_and_check_marginals(600_000, budget=60_000, seed=7)


def test_many_urls_come_out_in_url_order_and_the_plan_follows_the_gains():
    # 150,000 URLs on 500 hosts; only refresh URLs, so one pass plans.
    rng = np.random.default_rng(8)
    n = 150_000
    rows = [(f"https://h{i % 500}.test/{rng.integers(10**9)}/{i}", float(rate), float(ago))
            for i, (rate, ago) in enumerate(zip(rng.exponential(0.3, n), rng.integers(0, 30, n)))]
    stats = stats_table(rows)
    config = settings(daily_fetch_budget=5_000, discovery_share=0, max_pages_per_host=10**6)
    urls = recrawl_priorities(stats, None, None, known(stats), PLAN_DAY, config).urls
    assert urls["url"].to_pylist() == sorted(r[0] for r in rows)
    totals = check_budget(urls, None, config)
    assert totals["to_spend"] == 5_000
    planned = urls.filter(urls["planned"]).sort_by("plan_rank")
    assert len(planned) == totals["planned"] == 5_000
    due, gain = planned["due"].to_pylist(), planned["expected_gain"].to_numpy()
    assert due == sorted(due, reverse=True)  # due URLs first
    first = np.array(due)
    assert (np.diff(gain[first]) <= 0).all() and (np.diff(gain[~first]) <= 0).all()
    # No cap binds: a due URL left out is worth no more than the last due URL planned.
    left_out = urls.filter(pa.compute.and_(urls["due"], pa.compute.invert(urls["planned"])))
    if first.any() and len(left_out):
        assert left_out["expected_gain"].to_numpy().max() <= gain[first].min()


def test_plan_reaches_past_a_capped_host_that_holds_the_best_urls():
    # The 3,000 best URLs are on a host capped at 5 a day: the plan must look past all of
    # them (far beyond the budget's share of the order) to fill its budget elsewhere.
    rows = [(f"https://slow.test/p/{i}", 0.001, 1000) for i in range(3000)]
    rows += [(f"https://fast.test/p/{i}", 0.001, 1000) for i in range(100)]
    stats = stats_table(rows)
    hosts = pa.table({"host": ["slow.test", "fast.test"], "delay_s": [86_400 / 5, 1.0], "flagged": [False, False]})
    inlinks = pa.table({"url": [f"https://slow.test/p/{i}" for i in range(3000)], "inlinks": [100] * 3000})
    config = settings(daily_fetch_budget=10, discovery_share=0)
    result = recrawl_priorities(stats, inlinks, hosts, known(stats), PLAN_DAY, config)
    urls = result.urls
    totals = check_budget(urls, hosts, config)
    assert totals["to_spend"] == 10 and totals["planned"] == 10
    assert pa.compute.all(urls["due"]).as_py()  # every URL is due; the slow host's are worth more
    slow = pa.compute.equal(urls["host"], "slow.test")
    assert pa.compute.min(urls.filter(slow)["expected_gain"]).as_py() > \
        pa.compute.max(urls.filter(pa.compute.invert(slow))["expected_gain"]).as_py()
    planned = urls.filter(urls["planned"])
    assert sorted(planned["host"].to_pylist()) == ["fast.test"] * 5 + ["slow.test"] * 5


def test_known_urls_in_any_order_give_the_plan_of_url_order():
    # The asset passes the known URLs in URL order (recrawl_inputs.known_urls); any other
    # order is sorted first, so the plan and the table are the same.
    rng = np.random.default_rng(11)
    rows = [(f"https://h{i % 9}.test/p/{rng.integers(10**6)}/{i}", float(rate), float(ago))
            for i, (rate, ago) in enumerate(zip(rng.exponential(0.3, 3000), rng.integers(0, 30, 3000)))]
    stats = stats_table(rows)
    new = [f"https://h{i % 9}.test/new/{i}" for i in range(300)]
    ordered = known(stats, new)
    ordered = ordered.take(pa.compute.sort_indices(ordered["url"]))
    shuffled = ordered.take(rng.permutation(len(ordered)))
    config = settings(daily_fetch_budget=400)
    first = recrawl_priorities(stats, None, None, ordered, PLAN_DAY, config).urls
    second = recrawl_priorities(stats, None, None, shuffled, PLAN_DAY, config).urls
    assert first.equals(second)
    totals = check_budget(first, None, config)
    assert (totals["planned"], totals["discovery"], totals["to_spend"]) == (400, 200, 400)
    assert first["url"].to_pylist() == sorted(first["url"].to_pylist())


def test_urls_only_change_stats_has_are_merged_into_url_order():
    # A URL fetched before but no longer among the known URLs (its link was dropped, or a
    # redirect target) keeps its row, in URL order among the known ones, with no in-links.
    rows = [(f"https://h{i % 4}.test/p/{i:03d}", 0.1 + 0.01 * i, 3) for i in range(60)]
    stats = stats_table(rows)
    urls = stats["url"].to_pylist()
    unknown = set(urls[::7])
    known_only = [f"https://h{i % 4}.test/p/{i:03d}x" for i in range(0, 60, 5)]  # new URLs between them
    listed = [u for u in urls if u not in unknown] + known_only
    known_urls = pa.table({"url": listed, "host": [u.split("/")[2] for u in listed],
                           "inlinks": [5] * len(listed)}).sort_by("url")
    result = recrawl_priorities(stats, None, None, known_urls, PLAN_DAY, settings(daily_fetch_budget=20)).urls
    assert result["url"].to_pylist() == sorted(set(urls) | set(known_only))
    row = {r["url"]: r for r in result.to_pylist()}
    for url in urls:
        assert row[url]["kind"] == Kind.REFRESH and row[url]["host"] == url.split("/")[2]
        assert row[url]["change_rate"] == pytest.approx(0.1 + 0.01 * int(url[-3:]))
        assert row[url]["importance"] == (1.0 if url in unknown else 6.0)
    assert {row[u]["kind"] for u in known_only} == {Kind.DISCOVERY}


def test_host_medians_given_with_the_hosts_equal_the_ones_computed():
    # The asset passes change_stats' host medians (host_changes.parquet); without them the
    # step computes the same medians; a new URL takes its host's, or everyone's.
    rows = [(f"https://h{i % 3}.test/p/{i}", 0.05 * (1 + i % 3) + 0.001 * i, 4) for i in range(90)]
    stats = stats_table(rows)
    new = ["https://h0.test/new", "https://h2.test/new", "https://other.test/new"]
    facts = pa.table({"host": ["h0.test", "h1.test", "h2.test", "other.test"], "delay_s": [1.0] * 4,
                      "flagged": [False] * 4})
    computed = recrawl_priorities(stats, None, facts, known(stats, new), PLAN_DAY, settings(daily_fetch_budget=20))
    rates = pa.table({"host": [u.split("/")[2] for u in stats["url"].to_pylist()], "rate": stats["change_rate"]})
    exact = dict(duckdb.sql("SELECT host, median(rate) FROM rates GROUP BY host").fetchall())  # as change_stats
    with_medians = facts.append_column("median_rate", pa.array([exact.get(h) for h in facts["host"].to_pylist()],
                                                               pa.float64()))
    given = recrawl_priorities(stats, None, with_medians, known(stats, new), PLAN_DAY, settings(daily_fetch_budget=20))
    assert given.urls.equals(computed.urls)
    row = by_url(given)
    assert row["https://h0.test/new"]["change_rate"] == pytest.approx(exact["h0.test"])
    assert row["https://h2.test/new"]["change_rate"] == pytest.approx(exact["h2.test"])
    assert row["https://other.test/new"]["change_rate"] == pytest.approx(np.median(stats["change_rate"].to_numpy()))


def test_equal_gains_are_planned_in_url_order_across_many_hosts():
    # 80,000 hosts (past the 65,536 of one 16-bit radix pass) with two pages each at one of
    # three rates, so many pages are worth exactly the same: the plan takes them by gain, then
    # in URL order, at most one a host (its cap).
    rows = [(f"https://h{i // 2:05d}.test/p/{i % 2}", (0.05, 0.1, 0.2)[(i * 7) % 3], 5) for i in range(160_000)]
    stats = stats_table(rows)
    hosts = pa.table({"host": [f"h{h:05d}.test" for h in range(80_000)], "delay_s": [86_400.0] * 80_000,
                      "flagged": [False] * 80_000})
    config = settings(daily_fetch_budget=50_000, discovery_share=0)
    urls = recrawl_priorities(stats, None, hosts, known(stats), PLAN_DAY, config).urls
    totals = check_budget(urls, hosts, config)
    assert totals["to_spend"] == 50_000 and totals["planned"] == 50_000
    planned = urls.filter(urls["planned"]).sort_by("plan_rank")
    order = list(zip(planned["due"].to_pylist(), planned["expected_gain"].to_pylist(), planned["url"].to_pylist()))
    assert len(order) == 50_000 and len(set(g for _, g, _ in order)) < 10  # many ties
    assert order == sorted(order, key=lambda r: (not r[0], -r[1], r[2]))
    assert len({u.split("/")[2] for _, _, u in order}) == 50_000  # one a host


def test_host_caps_hold_across_more_hosts_than_one_16_bit_pass_tells_apart():
    # 70,000 hosts with three pages each, capped at two a day; the pages of a host are planned
    # far apart (first every host's best page, then every second-best): hosts 5 and 65,541 look
    # alike to the low 16 bits of their numbers and must still be told apart.
    rows = [(f"https://h{i // 3:05d}.test/p/{i % 3}", (0.3, 0.1, 0.03)[i % 3], 5) for i in range(210_000)]
    stats = stats_table(rows)
    hosts = pa.table({"host": [f"h{h:05d}.test" for h in range(70_000)], "delay_s": [43_200.0] * 70_000,
                      "flagged": [False] * 70_000})
    config = settings(daily_fetch_budget=150_000, discovery_share=0)
    urls = recrawl_priorities(stats, None, hosts, known(stats), PLAN_DAY, config).urls
    # The caps leave 140,000 of the 150,000 to spend: allocated, and planned.
    totals = check_budget(urls, hosts, config)
    assert totals["to_spend"] == totals["reachable"] == 140_000
    per_host = Counter(u.split("/")[2] for u in urls.filter(urls["planned"])["url"].to_pylist())
    assert max(per_host.values()) == 2 and sum(per_host.values()) == 140_000


def test_due_and_gain_is_a_function_of_each_page_alone():
    """Due day, gain and due of refresh, new and 404/410 pages: what the docstring says of a
    few, and the same values for the whole arrays as for any slicing of them."""
    rng = np.random.default_rng(11)
    n, today = 1000, 20_000.0  # days since the epoch
    kind = rng.integers(0, 3, n).astype(np.int8)
    last_visit = np.where(kind == KIND_CODES.index(Kind.DISCOVERY), np.nan, today - rng.uniform(0, 30, n))
    pages = {"change_rate": rng.exponential(0.2, n), "importance": rng.uniform(1, 5, n),
             "last_visit_t": last_visit, "last_fetch_t": np.where(np.isnan(last_visit), today - 3, last_visit),
             "gone_streak": rng.integers(0, 4, n), "last_status": rng.choice([200, 404, 410], n),
             "pending_change": rng.random(n) < 0.1, "kind_code": kind}
    # (held and never-fetched pages get frequencies, some none)
    frequency = np.where(kind == KIND_CODES.index(Kind.GONE), 0.0, rng.uniform(0, 1, n) * (rng.random(n) < 0.8))
    due_day, gain, due = due_and_gain(pages, frequency, today, 3.0, settings())

    new = kind == KIND_CODES.index(Kind.DISCOVERY)
    wanted = new & (frequency > 0)  # a page we do not hold, that the allocation would hold: due now
    assert (due_day[wanted] == today).all() and due[wanted].all() and (gain[new] > 0).all()
    assert np.isnan(due_day[new & (frequency == 0)]).all() and not due[new & (frequency == 0)].any()
    # its gain: all the fresh time a fetch buys over its interval, 1/f (or the mean interval, 3 days)
    interval = np.where(frequency[new] > 0, 1 / np.where(frequency[new] > 0, frequency[new], 1), 3.0)
    rate, weight = pages["change_rate"][new], pages["importance"][new]
    np.testing.assert_allclose(gain[new], weight * -np.expm1(-rate * interval) / rate)
    refresh = (kind == KIND_CODES.index(Kind.REFRESH)) & (frequency > 0) & ~pages["pending_change"]
    expected = np.maximum(np.floor(pages["last_visit_t"][refresh] + 1 / frequency[refresh]), today)
    assert (due_day[refresh] == expected).all() and (due[refresh] == (expected <= today)).all()
    gone_410 = (kind == KIND_CODES.index(Kind.GONE)) & (pages["last_status"] == 410)
    assert (due_day[gone_410] == np.maximum(np.floor(pages["last_fetch_t"][gone_410] + 365), today)).all()

    cuts = (0, 1, 377, 378, n)
    parts = [due_and_gain({k: v[a:b] for k, v in pages.items()}, frequency[a:b], today, 3.0, settings())
             for a, b in zip(cuts, cuts[1:])]
    for whole, sliced in zip((due_day, gain, due), zip(*parts)):
        np.testing.assert_array_equal(whole, np.concatenate(sliced))



def test_a_polite_hosts_backlog_of_several_days_gets_its_cap_of_the_discovery_floor(tmp_path):
    # 1,000 stale pages worth more than any new one (the new pages get the floor, 50 of 100);
    # 200 new pages with 2 in-links each on five fast hosts (40 each, under a day of their cap)
    # and 100 new pages without on a host of an hour's Crawl-delay: 24 a day, a backlog of
    # 100 / 24 = 4.2 days that only its own cap bounds. A day its cap goes unused is lost, while
    # the fast hosts' pages all fit in a day of theirs: the floor takes the polite host's 24 first.
    # A trap host (flagged, 10 a day) with 500 new pages, a backlog of 50 days, keeps its budget
    # and gains nothing from its backlog.
    stats = stats_table([(f"https://h{i % 5}.test/p/{i}", 1.0, 7) for i in range(1000)])
    new = [f"https://h{i % 5}.test/new/{i}" for i in range(200)]
    slow = [f"https://slow.test/new/{i}" for i in range(100)]
    trap = [f"https://trap.test/cal/{i}" for i in range(500)]
    inlinks = pa.table({"url": stats["url"].to_pylist() + new, "inlinks": np.r_[np.full(1000, 20), np.full(200, 2)]})
    hosts = pa.table({"host": ["slow.test", "trap.test"], "delay_s": [3600.0, 1.0], "flagged": [False, True]})
    config = settings(daily_fetch_budget=100, flagged_host_budget=10)
    result, rows, totals = written_plan(tmp_path, stats, inlinks, hosts, known(stats, new + slow + trap), PLAN_DAY,
                                        config)
    assert max(rows[u]["expected_gain"] for u in slow) < min(rows[u]["expected_gain"] for u in new)
    # The floor's total is unchanged (half the budget: 800 new pages would need more); the
    # polite host takes its whole cap of it, the fast hosts' new pages the rest, the trap nothing.
    assert result.counts.discovery_planned == 50
    assert totals["per_host"]["slow.test"] == 24
    assert sum(rows[u]["planned"] for u in new) == 26
    assert totals["per_host"]["trap.test"] == 0
    assert result.counts.refresh_planned == 50


def test_a_never_fetched_page_that_leads_to_unknown_pages_goes_before_those_that_lead_nowhere(tmp_path):
    # 10 pages of a pagination chain (their pool's first fetches showed 4 new pages each,
    # known_urls' leads) and 200 articles (0.1), all never fetched, same importance and rate;
    # 20 pages held. By their own copies alone the articles come first (URL order); counting
    # the unknown pages each leads to (of their host's importance, 1 here), the chain first.
    stats = stats_table([(f"https://a.test/old/{i}", 0.1, 1) for i in range(20)])
    chain = [f"https://a.test/page/{i}" for i in range(10)]
    articles = [f"https://a.test/article/{i}" for i in range(200)]
    known_urls = known(stats, articles + chain)
    leads = pa.array([0.0] * 20 + [0.1] * 200 + [4.0] * 10)
    config = settings(daily_fetch_budget=20, exploration_share=0.0, listing_reserve_share=0.0)
    for with_leads, expected in ((False, (0, 20)), (True, (10, 10))):
        table = known_urls.append_column("leads", leads) if with_leads else known_urls
        result, rows, _ = written_plan(tmp_path, stats, None, None, table, PLAN_DAY, config)
        planned = [u for u, r in rows.items() if r["planned"]]
        assert (sum("/page/" in u for u in planned), sum("/article/" in u for u in planned)) == expected
        assert result.counts.discovery_planned == 20
    gain = {u: r["expected_gain"] for u, r in rows.items()}
    assert gain[chain[0]] / gain[articles[0]] == pytest.approx((1 + 4.0) / (1 + 0.1))
