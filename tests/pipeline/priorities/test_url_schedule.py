"""The priorities step's schedule on small hand-made columns, without DuckDB: when each URL is
next due and what fetching it is worth (due_and_gain, both objectives, every kind), which
revisits teach a pool its rate most (exploration), and the schedule of a crawl (its
frequencies from the allocation, the plan's ranks and levels, its figures), in one part and in
several."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

from crawl_assets.crawler.settings import CrawlSettings
from crawl_assets.pipeline.priorities.priority_queries import KIND_CODES, Kind
from crawl_assets.pipeline.priorities.refresh_allocation import allocate, freshness
from crawl_assets.pipeline.priorities.url_schedule import (PartSchedule, due_and_gain, exploration_order,
                                                           exploration_ranking, schedule, schedule_parts)

# The schedule silences numpy where it divides by 0 or meets NaN on purpose: it must not warn.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

REFRESH, DISCOVERY, GONE = (KIND_CODES.index(k) for k in (Kind.REFRESH, Kind.DISCOVERY, Kind.GONE))
NOW = 20_000.0  # the plan day's midnight, in days since the epoch
NAN = float("nan")
SETTINGS = replace(CrawlSettings(), not_found_retry_days=7, not_found_max_days=180, gone_retry_days=365)

# A page's columns, unless a row says otherwise.
DEFAULTS = {"change_rate": 0.2, "importance": 1.0, "last_visit_t": NAN, "last_fetch_t": NAN, "gone_streak": 0,
            "last_status": 200, "pending_change": False, "event_stale": 0.0, "kind_code": REFRESH,
            "host_index": 0, "listing": False, "on_prior": False, "pool_key": 0}
DTYPES = {"gone_streak": np.int64, "last_status": np.int32, "pending_change": bool, "kind_code": np.int8,
          "host_index": np.int64, "listing": bool, "on_prior": bool, "pool_key": np.uint64}


def columns(rows: list[dict]) -> dict:
    return {name: np.array([row.get(name, default) for row in rows], dtype=DTYPES.get(name, np.float64))
            for name, default in DEFAULTS.items()}


def stale_chance(rate, elapsed):
    return 1 - math.exp(-rate * elapsed)


def fresh_days(rate, interval):
    """The fresh time a fetch buys over the interval: ∫ e^{-λt} dt over it."""
    return (1 - math.exp(-rate * interval)) / rate if rate > 0 else interval


def expected_age(rate, elapsed):
    """E[age] of a copy fetched `elapsed` days ago: ∫ (1 - e^{-λt}) dt."""
    return elapsed - (1 - math.exp(-rate * elapsed)) / rate if rate > 0 else 0.0


def test_a_held_page_is_due_a_period_after_its_last_visit_and_worth_the_fresh_time_it_buys():
    rows = [dict(last_visit_t=NOW - 1.5, change_rate=0.5, importance=2.0),  # f 1/4: due in 2.5 days
            dict(last_visit_t=NOW - 2.5),  # f 1/2: overdue, due today
            dict(last_visit_t=NOW - 1.75),  # f 1/2: due 6 a.m. today
            dict(last_visit_t=NOW - 3.0),  # f 0: never due, worth a day's fresh time
            dict(last_visit_t=NOW - 0.5, pending_change=True, importance=3.0),  # a listing dated it after: due now
            dict(last_visit_t=NOW - 0.5, event_stale=0.4),  # its host moved since: due now
            dict(last_visit_t=NOW - 0.5, event_stale=0.01, change_rate=2.0),  # its own rate says more
            dict(last_visit_t=NOW + 0.25, change_rate=0.0)]  # visited after midnight, never changes
    frequency = np.array([0.25, 0.5, 0.5, 0.0, 0.1, 0.1, 0.1, 0.2])
    due_day, gain, due = due_and_gain(columns(rows), frequency, NOW, 3.0, SETTINGS)
    np.testing.assert_array_equal(due_day, [NOW + 2, NOW, NOW, NAN, NOW, NOW, NOW, NOW + 5])
    assert due.tolist() == [False, True, True, False, True, True, True, False]
    expected = [2.0 * stale_chance(0.5, 1.5) * fresh_days(0.5, 4),
                stale_chance(0.2, 2.5) * fresh_days(0.2, 2),
                stale_chance(0.2, 1.75) * fresh_days(0.2, 2),
                stale_chance(0.2, 3.0) * fresh_days(0.2, 1.0),
                3.0 * 1.0 * fresh_days(0.2, 10),  # pending: stale for sure
                0.4 * fresh_days(0.2, 10),  # the host's event: 40 % stale, above its own 9.5 %
                stale_chance(2.0, 0.5) * fresh_days(2.0, 10),
                0.0]  # never changes: nothing to gain
    np.testing.assert_allclose(gain, expected, rtol=1e-12)


def test_under_the_age_objective_a_held_page_is_worth_its_copys_expected_age():
    rows = [dict(last_visit_t=NOW - 4.0, change_rate=0.5, importance=2.0),
            dict(last_visit_t=NOW - 0.5, pending_change=True),  # stale for sure: at least a day old
            dict(last_visit_t=NOW - 0.5, event_stale=0.7),  # its host's event: at least 0.7
            dict(last_visit_t=NOW - 9.0, event_stale=0.1),  # its own age says more
            dict(last_visit_t=NOW - 9.0, change_rate=0.0),
            dict(kind_code=DISCOVERY, change_rate=0.4),  # not held: missing, worth all it would buy
            dict(last_visit_t=NOW - 2.0, change_rate=0.0, pending_change=True),  # dated after: a day old at least
            dict(last_visit_t=NOW - 2.0, change_rate=0.0, event_stale=0.3)]
    frequency = np.array([0.25, 0.5, 0.5, 0.0, 0.5, 0.2, 0.25, 0.5])
    age = replace(SETTINGS, recrawl_objective="age")
    _, gain, _ = due_and_gain(columns(rows), frequency, NOW, 3.0, age)
    expected = [2.0 * expected_age(0.5, 4.0) * fresh_days(0.5, 4),
                max(expected_age(0.2, 0.5), 1.0) * fresh_days(0.2, 2),
                max(expected_age(0.2, 0.5), 0.7) * fresh_days(0.2, 2),
                expected_age(0.2, 9.0) * fresh_days(0.2, 1.0),
                0.0,
                fresh_days(0.4, 5),
                4.0 * 1.0,
                2.0 * 0.3]
    np.testing.assert_allclose(gain, expected, rtol=1e-12)
    assert expected_age(0.2, 9.0) > 0.1 and expected_age(0.2, 0.5) < 0.7


def test_a_page_never_fetched_is_due_at_once_if_the_allocation_holds_it():
    rows = [dict(kind_code=DISCOVERY, change_rate=0.4, importance=2.0),
            dict(kind_code=DISCOVERY, change_rate=0.4),
            dict(kind_code=DISCOVERY, change_rate=0.0, importance=5.0)]
    due_day, gain, due = due_and_gain(columns(rows), np.array([0.5, 0.0, 0.0]), NOW, 3.0, SETTINGS)
    assert due_day[0] == NOW and np.isnan(due_day[1:]).all()
    assert due.tolist() == [True, False, False]
    # missing: stale for sure; the fresh time over 1/f, or over the mean interval without an f
    np.testing.assert_allclose(gain, [2.0 * fresh_days(0.4, 2), fresh_days(0.4, 3.0), 5.0 * 3.0], rtol=1e-12)


def test_a_404_comes_back_on_a_doubling_interval_and_a_410_after_a_year_or_never():
    rows = [dict(kind_code=GONE, last_status=404, gone_streak=streak, last_fetch_t=NOW - 6.5, importance=2.0)
            for streak in (0, 1, 2, 3, 6, 20)]
    rows += [dict(kind_code=GONE, last_status=410, gone_streak=1, last_fetch_t=NOW - 363.5),
             dict(kind_code=GONE, last_status=410, gone_streak=4, last_fetch_t=NOW - 365.5)]
    pages = columns(rows)
    due_day, gain, due = due_and_gain(pages, np.zeros(len(rows)), NOW, 3.0, SETTINGS)
    # 7 days after the last fetch, 14, 28, ... at most 180; 365 for a 410
    waits = [7, 7, 14, 28, 180, 180, 365, 365]
    np.testing.assert_array_equal(due_day, np.maximum(np.floor(pages["last_fetch_t"] + waits), NOW))
    assert due.tolist() == [True, True, False, False, False, False, False, True]  # (the first 410: tomorrow)
    # worth a tenth of a page never fetched (of the mean interval's fresh time)
    np.testing.assert_allclose(gain, [2.0 * 0.1 * fresh_days(0.2, 3.0)] * 6 + [0.1 * fresh_days(0.2, 3.0)] * 2,
                               rtol=1e-12)
    # gone_retry_days = 0: a 410 never comes back (a 404 still does)
    never = replace(SETTINGS, gone_retry_days=0)
    due_day, _, due = due_and_gain(pages, np.zeros(len(rows)), NOW, 3.0, never)
    assert np.isnan(due_day[6:]).all() and not due[6:].any() and due[:2].all()
    # a 410 after a day
    due_day, _, _ = due_and_gain(pages, np.zeros(len(rows)), NOW, 3.0, replace(SETTINGS, gone_retry_days=1))
    np.testing.assert_array_equal(due_day[6:], [NOW, NOW])
    # other limits, read from the settings
    other = replace(SETTINGS, not_found_retry_days=2, not_found_max_days=10, gone_retry_days=30)
    due_day, _, _ = due_and_gain(pages, np.zeros(len(rows)), NOW, 3.0, other)
    np.testing.assert_array_equal(due_day, np.maximum(np.floor(pages["last_fetch_t"] + [2, 2, 4, 8, 10, 10, 30, 30]),
                                                      NOW))


def test_a_page_without_a_host_event_column_is_as_one_without_an_event():
    rows = [dict(last_visit_t=NOW - 2.0), dict(last_visit_t=NOW - 0.5, pending_change=True)]
    pages = columns(rows)
    with_event = due_and_gain(pages, np.array([0.1, 0.1]), NOW, 3.0, SETTINGS)
    del pages["event_stale"]
    without = due_and_gain(pages, np.array([0.1, 0.1]), NOW, 3.0, SETTINGS)
    for a, b in zip(with_event, without):
        np.testing.assert_array_equal(a, b)


def test_exploration_revisits_the_pools_that_teach_most_first():
    """Rows on their pool's prior, visited before the plan day, score W / (n + j): W the
    importance of the pool's URLs on the prior, n its URLs with intervals of their own, j the
    sample's number in its pool (the longest-unvisited first, then by row)."""
    rows = [
        # pool 7: W = 2 + 2 + 2 = 6 (on the prior), n = 1 (row 3 has its own intervals)
        dict(on_prior=True, pool_key=7, importance=2.0, last_visit_t=NOW - 5),  # 6 / 2 (second: visited later)
        dict(on_prior=True, pool_key=7, importance=2.0, last_visit_t=NOW - 9),  # 6 / (1 + 1): the first of its pool
        dict(on_prior=True, pool_key=7, importance=2.0, last_visit_t=NOW - 5),  # 6 / 4 (ties with row 0: by row)
        dict(on_prior=False, pool_key=7, importance=50.0, last_visit_t=NOW - 5),  # has its own rate: not explored
        # pool 3: W = 10 + 1 + 2 (rows 10 and 12, on the prior but visited on the plan day), n = 0
        dict(on_prior=True, pool_key=3, importance=10.0, last_visit_t=NOW - 2),  # 13 / 1
        # pool 5: W = 1 + 4 = 5 (row 6 is on the prior but not eligible), n = 2
        dict(on_prior=True, pool_key=5, importance=1.0, last_visit_t=NOW - 1),  # 5 / 3
        dict(on_prior=True, pool_key=5, importance=4.0, last_visit_t=NOW - 1),  # (not eligible)
        dict(on_prior=False, pool_key=5, last_visit_t=NOW - 1),
        dict(on_prior=False, pool_key=5, last_visit_t=NOW - 1),
        dict(on_prior=True, pool_key=5, importance=9.0, kind_code=DISCOVERY),  # never fetched: not counted
        dict(on_prior=True, pool_key=3, importance=1.0, last_visit_t=NOW + 0.2),  # visited on the plan day
        dict(on_prior=True, pool_key=11, importance=8.0, last_visit_t=NOW - 3),  # not eligible, its pool unseen
        dict(on_prior=True, pool_key=3, importance=2.0, last_visit_t=NOW),  # visited at the plan day's midnight
        dict(on_prior=True, pool_key=13, importance=0.5, last_visit_t=NOW - 1),  # 0.5 / 1: a pool without evidence
        dict(on_prior=False, pool_key=4, last_visit_t=NOW - 1),  # evidence for a pool none explores
    ]
    pages = columns(rows)
    eligible = np.array([True] * 6 + [False] + [True] * 4 + [False] + [True] * 3)
    order, score = exploration_ranking(pages, eligible, pages["importance"], NOW)
    assert order.tolist() == [4, 1, 0, 5, 2, 13]
    np.testing.assert_allclose(score, [13.0, 3.0, 2.0, 5 / 3, 1.5, 0.5], rtol=1e-12)
    np.testing.assert_array_equal(exploration_order(pages, eligible, pages["importance"], NOW), order)
    # nothing eligible: nothing to explore
    order, score = exploration_ranking(pages, np.zeros(len(rows), dtype=bool), pages["importance"], NOW)
    assert len(order) == 0 and len(score) == 0


def crawl_pages(seed: int, hosts: int = 6, pages: int = 120):
    """A small crawl's columns (in URL order) and its hosts' caps: refresh pages (some on their
    pool's prior, some pending), pages never fetched, 404s and 410s, a few listings."""
    rng = np.random.default_rng(seed)
    kind = rng.choice([REFRESH, REFRESH, REFRESH, DISCOVERY, GONE], pages)
    visited = kind == REFRESH
    rows = [dict(change_rate=float(rng.lognormal(-2, 1)), importance=float(1 + rng.integers(0, 5)),
                 last_visit_t=float(NOW - rng.uniform(0.1, 20)) if visited[i] else NAN,
                 last_fetch_t=float(NOW - rng.uniform(0.1, 20)), gone_streak=int(rng.integers(1, 4)),
                 last_status=int(rng.choice([404, 410])) if kind[i] == GONE else 200,
                 pending_change=bool(visited[i] and rng.random() < 0.05), kind_code=int(kind[i]),
                 host_index=int(rng.integers(0, hosts)), listing=bool(visited[i] and rng.random() < 0.04),
                 on_prior=bool(visited[i] and rng.random() < 0.3), pool_key=int(rng.integers(1, 4)))
            for i in range(pages)]
    for row in rows:  # a pool is a URL pattern of one host (change_stats' hash(url_pattern, host))
        row["pool_key"] += 10 * row["host_index"]
    caps = pa.table({"host": [f"h{h}.test" for h in range(hosts)], "cap": rng.choice([2, 5, 200], hosts).astype(float),
                     "flagged": rng.random(hosts) < 0.2})
    return columns(rows), caps


def check_schedule(pages, caps, settings, out, figures):
    """The schedule's columns against the allocation, due_and_gain and the plan's rules."""
    budget = settings.daily_fetch_budget
    kind, host, cap = pages["kind_code"], pages["host_index"], caps["cap"].to_numpy()
    held = np.flatnonzero(kind != GONE)
    allocation = allocate(pages["change_rate"][held], pages["importance"][held], host[held], cap, budget,
                          objective=settings.recrawl_objective)
    frequency = out["frequency"].to_numpy()
    np.testing.assert_array_equal(frequency[held], allocation.frequency)
    assert (frequency[kind == GONE] == 0).all()
    mean_interval = max(len(held) / budget, 1.0)
    due_day, gain, due = due_and_gain(pages, frequency, NOW, mean_interval, settings)
    np.testing.assert_array_equal(out["expected_gain"].to_numpy(), gain)
    np.testing.assert_array_equal(out["due"].to_numpy(zero_copy_only=False), due)
    assert out["next_due"].type == pa.date32()
    np.testing.assert_array_equal(out["next_due"].is_null().to_numpy(zero_copy_only=False), np.isnan(due_day))
    known = ~np.isnan(due_day)
    np.testing.assert_array_equal(out["next_due"].cast(pa.int32()).filter(pa.array(known)).to_numpy(), due_day[known])
    planned = out["planned"].to_numpy(zero_copy_only=False)
    assert 0 < planned.sum() <= budget
    assert (np.bincount(host[planned], minlength=len(cap)) <= cap).all()
    # planned rows are candidates: due, held pages the allocation wants, or never fetched
    refresh = kind == REFRESH
    candidate = due | (refresh & (frequency > 0)) | (kind == DISCOVERY)
    listing = pages["listing"] & refresh
    explorable = refresh & pages["on_prior"] & ~due & ~listing
    assert (candidate | explorable | listing)[planned].all()
    # ranks 1..n over the planned rows, none elsewhere; levels: the rank cut into equal groups
    rank = out["plan_rank"]
    assert rank.null_count == len(planned) - planned.sum()
    ranks = rank.filter(pa.array(planned)).to_numpy()
    assert sorted(ranks.tolist()) == list(range(1, planned.sum() + 1))
    levels = len(settings.priority_weights)
    level = out["level"].to_numpy()
    np.testing.assert_array_equal(level[planned], 1 + (ranks - 1) * levels // planned.sum())
    assert (level[~planned] == levels).all()
    # the figures: capped hosts, the price, the expected freshness of the refresh pages
    capped, price, expected, explored = figures
    assert (capped, price) == (len(allocation.capped_hosts), allocation.price)
    w = pages["importance"][refresh]
    assert expected == pytest.approx((w * freshness(pages["change_rate"][refresh], frequency[refresh])).sum() / w.sum(),
                                     rel=1e-12)
    return planned, ranks


@pytest.mark.parametrize("objective", ["freshness", "age"])
@pytest.mark.parametrize("budget", [1, 12, 40, 80])
def test_the_schedule_holds_the_allocation_the_due_dates_and_a_plan_within_the_caps(objective, budget):
    pages, caps = crawl_pages(seed=budget)
    settings = replace(SETTINGS, daily_fetch_budget=budget, recrawl_objective=objective, exploration_share=0.1,
                       listing_reserve_share=0.1, discovery_share=0.1)
    out, figures = schedule(pages, caps, NOW, settings)
    assert {name: column.type for name, column in out.items()} == {
        "frequency": pa.float64(), "next_due": pa.date32(), "expected_gain": pa.float64(), "due": pa.bool_(),
        "planned": pa.bool_(), "plan_rank": pa.int64(), "level": pa.int32()}
    assert list(out) == ["frequency", "next_due", "expected_gain", "due", "planned", "plan_rank", "level"]
    planned, _ = check_schedule(pages, caps, settings, out, figures)
    assert figures[3] > 0 or budget < 10  # some rows explored


def test_the_plan_ranks_listings_first_then_due_pages_by_gain():
    # one host, no cap to speak of; budget 4: a listing, then the three due pages worth most
    rows = [dict(last_visit_t=NOW - 10, change_rate=0.5, importance=w) for w in (1.0, 4.0, 2.0, 3.0, 5.0)]
    rows += [dict(last_visit_t=NOW - 0.5, listing=True, change_rate=0.01),  # listing: first, though worth little
             dict(last_visit_t=NOW - 0.5, change_rate=0.01, importance=0.1)]  # not due, worth little
    pages = columns(rows)
    caps = pa.table({"host": ["a.test"], "cap": [100.0], "flagged": [False]})
    settings = replace(SETTINGS, daily_fetch_budget=4, listing_reserve_share=0.25, discovery_share=0.0,
                       exploration_share=0.0, priority_weights=(4.0, 2.0))
    out, figures = schedule(pages, caps, NOW, settings)
    planned, _ = check_schedule(pages, caps, settings, out, figures)
    assert out["plan_rank"].to_pylist() == [None, 3, None, 4, 2, 1, None]
    assert out["level"].to_pylist() == [2, 2, 2, 2, 1, 1, 2]
    assert figures[3] == 0
    # a second listing, worth more: the reserve (one of six) takes it, the other waits for the
    # due pages, which take the rest (the rank is the place in the plan's order, listings first)
    pages = columns(rows + [dict(last_visit_t=NOW - 0.5, listing=True, change_rate=0.02)])
    settings = replace(settings, daily_fetch_budget=6, listing_reserve_share=1 / 6)
    out, figures = schedule(pages, caps, NOW, settings)
    check_schedule(pages, caps, settings, out, figures)
    assert out["plan_rank"].to_pylist() == [6, 3, 5, 4, 2, None, None, 1]


def test_a_held_page_the_allocation_gives_nothing_is_planned_only_when_due():
    """Ten slow pages worth more take the budget; of two pages changing 50 times a day (no
    fetch allocated), the one a listing dated after our copy is due and planned first."""
    rows = [dict(last_visit_t=NOW - 0.5, change_rate=0.01, importance=5.0) for _ in range(10)]
    rows += [dict(last_visit_t=NOW - 0.5, change_rate=50.0), dict(last_visit_t=NOW - 0.5, change_rate=50.0,
                                                                   pending_change=True)]
    pages = columns(rows)
    caps = pa.table({"host": ["a.test"], "cap": [100.0], "flagged": [False]})
    settings = replace(SETTINGS, daily_fetch_budget=3, discovery_share=0.0, exploration_share=0.0)
    out, figures = schedule(pages, caps, NOW, settings)
    check_schedule(pages, caps, settings, out, figures)
    assert out["frequency"].to_pylist()[10:] == [0.0, 0.0]
    assert out["plan_rank"].to_pylist()[10:] == [None, 1]
    assert sum(out["planned"].to_pylist()[:10]) == 2


def test_a_capped_host_holding_the_best_pages_does_not_stop_the_plan_short():
    """The plan reads the head of the order first (2 x budget + 1,024 rows); all of it on a host
    capped at one fetch a day, it reads further, to the other host's pages."""
    rows = [dict(last_visit_t=NOW - 30, change_rate=0.5, importance=100.0, host_index=0, pending_change=True)
            for _ in range(1200)]
    rows += [dict(last_visit_t=NOW - 30, change_rate=0.5, importance=1.0, host_index=1) for _ in range(6)]
    pages = columns(rows)
    caps = pa.table({"host": ["a.test", "b.test"], "cap": [1.0, 100.0], "flagged": [False, False]})
    settings = replace(SETTINGS, daily_fetch_budget=5, discovery_share=0.0, exploration_share=0.0,
                       listing_reserve_share=0.0)
    out, figures = schedule(pages, caps, NOW, settings)
    planned = out["planned"].to_numpy(zero_copy_only=False)
    assert np.bincount(pages["host_index"][planned]).tolist() == [1, 4]
    check_schedule(pages, caps, settings, out, figures)


def test_a_crawl_without_refresh_pages_is_all_fresh_and_a_budget_of_nothing_plans_nothing():
    rows = [dict(kind_code=DISCOVERY), dict(kind_code=DISCOVERY, host_index=1)]
    caps = pa.table({"host": ["a.test", "b.test"], "cap": [5.0, 5.0]})  # (no flagged column: none)
    out, figures = schedule(columns(rows), caps, NOW, replace(SETTINGS, daily_fetch_budget=5))
    assert figures[2] == 1.0
    assert out["planned"].to_pylist() == [True, True]  # (the budget is more than the URLs)
    out, figures = schedule(columns(rows), caps, NOW, replace(SETTINGS, daily_fetch_budget=0))
    assert out["planned"].to_pylist() == [False, False] and out["frequency"].to_pylist() == [0.0, 0.0]
    assert figures[1] == math.inf
    # without a budget, the interval a fetch of a page without a frequency buys is a day
    np.testing.assert_allclose(out["expected_gain"].to_numpy(), [fresh_days(0.2, 1.0)] * 2, rtol=1e-12)


def test_a_held_page_that_never_changes_is_not_planned_though_budget_is_left():
    rows = [dict(last_visit_t=NOW - 3, change_rate=0.0, importance=0.2),
            dict(last_visit_t=NOW - 3, change_rate=0.3, importance=0.3)]
    pages = columns(rows)
    caps = pa.table({"host": ["a.test"], "cap": [5.0], "flagged": [False]})
    settings = replace(SETTINGS, daily_fetch_budget=4)
    out, figures = schedule(pages, caps, NOW, settings)
    check_schedule(pages, caps, settings, out, figures)
    assert out["planned"].to_pylist() == [False, True]
    # the expected freshness: the importance-weighted mean, whatever the weights add up to
    assert figures[2] == pytest.approx((0.2 * 1.0 + 0.3 * float(freshness(0.3, 1.0))) / 0.5, rel=1e-12)


def test_the_discovery_floor_counts_every_url_never_fetched_not_only_those_offered():
    """3,000 URLs never fetched, worth less than 300 due pages: the floor covers them in 30
    days (100 a day), though the plan reads only the head of the order (2 x 200 + 1,024 rows)."""
    rows = [dict(kind_code=DISCOVERY, importance=0.01 * (1 + i / 3000), host_index=1) for i in range(3000)]
    rows += [dict(last_visit_t=NOW - 40, change_rate=0.5, importance=10.0, pending_change=True) for _ in range(300)]
    pages = columns(rows)
    caps = pa.table({"host": ["a", "b"], "cap": [1e6, 1e6], "flagged": [False, False]})
    settings = replace(SETTINGS, daily_fetch_budget=200, discovery_share=0.01, discovery_days=30,
                       exploration_share=0.0)
    out, figures = schedule(pages, caps, NOW, settings)
    planned = out["planned"].to_numpy(zero_copy_only=False)
    assert planned[:3000].sum() == 100 and planned[3000:].sum() == 100


def test_a_polite_hosts_backlog_takes_the_discovery_floor_first():
    """Host 0 (cap 2) knows 6 URLs it never fetched: three days of its cap, the floor's first
    (2 of them); host 1's new URLs, worth more, fill the rest of the floor."""
    rows = [dict(kind_code=DISCOVERY, host_index=0, importance=1.0, change_rate=0.1) for _ in range(6)]
    rows += [dict(kind_code=DISCOVERY, host_index=1, importance=5.0, change_rate=0.1) for _ in range(6)]
    rows += [dict(last_visit_t=NOW - 20, host_index=2, importance=50.0, change_rate=0.5) for _ in range(10)]
    pages = columns(rows)
    caps = pa.table({"host": ["a", "b", "c"], "cap": [2.0, 100.0, 100.0], "flagged": [False, False, False]})
    settings = replace(SETTINGS, daily_fetch_budget=8, discovery_share=0.5, exploration_share=0.0,
                       discovery_days=30)
    out, figures = schedule(pages, caps, NOW, settings)
    planned = out["planned"].to_numpy(zero_copy_only=False)
    assert np.bincount(pages["host_index"][planned], minlength=3).tolist() == [2, 2, 4]
    # flagged, host 0 keeps its small budget but its backlog is not taken first
    flagged = caps.set_column(2, "flagged", pa.array([True, False, False]))
    out, _ = schedule(pages, flagged, NOW, settings)
    planned = out["planned"].to_numpy(zero_copy_only=False)
    assert np.bincount(pages["host_index"][planned], minlength=3).tolist() == [0, 4, 4]


def pages_adder():
    """Page rows, and the function adding `n` pages of one host with the same columns to them."""
    rows = []

    def add(host, n, **page):
        rows.extend(dict(host_index=host, **page) for _ in range(n))
    return rows, add


def page_urls(n: int) -> pa.Array:
    """The URLs of `n` pages, in the order of their rows (and of their URLs)."""
    return pa.array([f"https://x.test/{i:04d}" for i in range(n)])


def backlog_settings(budget: int, discovery_share: float) -> CrawlSettings:
    """A budget whose floor (discovery_share of it) and value pass alone share it out."""
    return replace(SETTINGS, daily_fetch_budget=budget, discovery_share=discovery_share, discovery_days=30,
                   exploration_share=0.0, listing_reserve_share=0.0)


def in_parts(pages, caps, urls, settings, hosts_of_parts, chunked=True):
    """schedule_parts over the crawl split by host (URLs as chunked arrays, as the step reads
    them, or not), each part's columns put back in the crawl's rows; the parts and their figures."""
    parts, part_urls, rows_of = [], [], []
    for hosts in hosts_of_parts:
        rows = np.flatnonzero(np.isin(pages["host_index"], hosts))
        mine = {name: values[rows] for name, values in pages.items()}
        mine["host_index"] = np.searchsorted(hosts, pages["host_index"][rows])
        parts.append(PartSchedule(mine, caps.take(pa.array(hosts, pa.int64())), NOW, settings))
        taken = urls.take(pa.array(rows, pa.int64()))
        part_urls.append(pa.chunked_array([taken[:len(rows) // 2], taken[len(rows) // 2:]], pa.string())
                         if chunked else taken)
        rows_of.append(rows)
    out, figures = schedule_parts(parts, settings, part_urls)
    merged = {}
    for name in out[0]:
        merged[name] = [None] * len(urls)
        for rows, columns_ in zip(rows_of, out):
            for row, value in zip(rows, columns_[name].to_pylist()):
                merged[name][row] = value
    return parts, merged, figures


def check_parts(whole, figures, merged, part_figures):
    assert part_figures[:2] == figures[:2] and part_figures[3] == figures[3]
    assert part_figures[2] == pytest.approx(figures[2], rel=1e-12)
    for name in whole:
        assert merged[name] == whole[name].to_pylist(), name


@pytest.mark.parametrize("budget", [10, 30, 90])
def test_the_schedule_of_a_crawl_in_parts_is_the_one_process_schedule(budget):
    pages, caps = crawl_pages(seed=5, hosts=10, pages=300)
    pages["kind_code"][pages["host_index"] == 9] = GONE  # host 9: 404s and 410s only
    pages["last_fetch_t"][pages["host_index"] == 9] = NOW - 0.5
    urls = pa.array([f"https://h{h}.test/{i:04d}" for i, h in enumerate(pages["host_index"])])
    order = np.argsort(urls.to_numpy(zero_copy_only=False), kind="stable")  # the columns come in URL order
    pages, urls = {name: values[order] for name, values in pages.items()}, urls.take(pa.array(order))
    settings = replace(SETTINGS, daily_fetch_budget=budget, exploration_share=0.1, listing_reserve_share=0.1,
                       discovery_share=0.1)
    whole, figures = schedule(pages, caps, NOW, settings)
    check_schedule(pages, caps, settings, whole, figures)
    # three parts, a part of no host, one of a host with nothing to offer (gone a day ago)
    hosts_of_parts = ([0, 4, 5], [1, 2], [], [9], [3, 6, 7, 8])
    parts, merged, part_figures = in_parts(pages, caps, urls, settings, hosts_of_parts)
    check_parts(whole, figures, merged, part_figures)
    # each part explores its refresh URLs on their pool's prior, not due, not listings, best first
    for part in parts:
        refresh = part.pages["kind_code"] == REFRESH
        eligible = refresh & ~part.due & ~(part.pages["listing"] & refresh)
        np.testing.assert_array_equal(part.explore, exploration_order(part.pages, eligible, part.weight, NOW))
    assert sum(len(part.explore) for part in parts) > 0


def test_a_crawl_in_parts_shares_the_edge_and_takes_the_backlogs_as_in_one_process():
    """Pages changing 50 times a day on hosts of two parts (the price at their edge: what the
    others leave is shared), and polite hosts' backlogs in both: the floor (3) takes the
    longest backlogs first, across the parts, as the one-process plan does."""
    rows, add = pages_adder()
    add(0, 2, kind_code=DISCOVERY, change_rate=0.1, importance=2.0)  # cap 1: four days of backlog
    add(0, 2, kind_code=DISCOVERY, change_rate=500.0)  # (allocated nothing: not due)
    add(1, 3, kind_code=DISCOVERY, change_rate=0.1, importance=3.0)  # cap 2: a day and a half
    add(2, 50, last_visit_t=NOW - 0.5, change_rate=50.0)  # fast pages, uncapped
    add(3, 3, kind_code=DISCOVERY, change_rate=0.1, importance=1.5)  # cap 1: three days
    add(4, 12, kind_code=DISCOVERY, change_rate=0.1, importance=1.0)  # cap 3: four days
    add(5, 50, last_visit_t=NOW - 0.5, change_rate=50.0)
    add(5, 10, last_visit_t=NOW - 3, change_rate=0.01)
    pages = columns(rows)
    caps = pa.table({"host": [f"h{h}" for h in range(6)], "cap": [1.0, 2.0, 1e6, 1.0, 3.0, 1e6],
                     "flagged": [False] * 6})
    urls = page_urls(len(rows))
    settings = backlog_settings(12, 0.25)
    whole, figures = schedule(pages, caps, NOW, settings)
    check_schedule(pages, caps, settings, whole, figures)
    frequency = np.array(whole["frequency"].to_pylist())
    fast = pages["change_rate"] == 50.0
    assert (frequency[fast] == frequency[fast][0]).all() and frequency[fast][0] > 0  # the edge's share
    assert figures[1] == pytest.approx(0.02, rel=1e-9)
    parts, merged, part_figures = in_parts(pages, caps, urls, settings, ([0, 2, 3], [1, 4, 5]))
    check_parts(whole, figures, merged, part_figures)
    parts, merged, part_figures = in_parts(pages, caps, urls, settings, ([1, 4], [0, 2, 3, 5]))
    check_parts(whole, figures, merged, part_figures)


@pytest.mark.parametrize("floor, per_host", [(3, [1, 0, 0, 2, 5, 0, 1, 0]), (5, [1, 0, 0, 3, 5, 1, 1, 0])])
def test_the_floor_takes_the_longest_backlogs_first_across_the_parts(floor, per_host):
    """The discovery floor (3 or 5 of the budget) takes polite hosts' backlogs, the longest in days of their
    cap first (then due before not, then by gain), each host's first `cap` URLs; the rest of the
    budget goes to five stale pages worth far more. The same over parts as in one process."""
    rows, add = pages_adder()
    new = dict(kind_code=DISCOVERY, change_rate=0.1)
    add(0, 4, **new, importance=0.5)  # cap 1: four days of backlog, due
    add(1, 3, **new, importance=0.05)  # cap 2: a day and a half
    add(2, 3, **new, importance=1e-20)  # cap 1: three days (worth next to nothing: not due)
    add(3, 12, kind_code=DISCOVERY, change_rate=500.0, importance=1e-3)  # cap 3: four days, none due
    add(4, 5, last_visit_t=NOW - 30, change_rate=0.5, importance=100.0)  # stale and worth much
    add(5, 6, **new, importance=3e-20)  # cap 2: three days, worth three times host 2's
    add(6, 1, last_visit_t=NOW - 30, change_rate=0.5, importance=50.0)  # a part of one URL
    add(7, 10, last_visit_t=NOW - 0.2, change_rate=0.5, importance=0.5)  # fetched lately: not due
    pages = columns(rows)
    caps = pa.table({"host": [f"h{h}" for h in range(8)], "cap": [1.0, 2.0, 1.0, 3.0, 1e6, 2.0, 1e6, 1e6],
                     "flagged": [False] * 8})
    urls = page_urls(len(rows))
    settings = backlog_settings(floor + 6, floor / (floor + 6))
    whole, figures = schedule(pages, caps, NOW, settings)
    check_schedule(pages, caps, settings, whole, figures)
    planned = np.array(whole["planned"].to_pylist())
    assert not np.array(whole["due"].to_pylist())[pages["host_index"] == 3].any()
    # host 0's (four days, due), host 3's (four days, not due), host 5's (three days, worth more than host 2's)
    assert np.bincount(pages["host_index"][planned], minlength=8).tolist() == per_host
    parts, merged, part_figures = in_parts(pages, caps, urls, settings, ([0, 1, 4], [2, 3, 5, 7], [6]), chunked=False)
    check_parts(whole, figures, merged, part_figures)


def test_a_polite_hosts_backlog_leaves_its_cap_to_its_due_pages_worth_more_across_the_parts():
    """Host 0 (cap 4) has 6 new pages of little importance and 2 held pages, stale and worth
    much; host 1 five held pages worth half as much, host 2 three new pages. The floor (5 of
    10) takes 2 of host 0's new pages (its first 4 rows by gain are its 2 held pages and 2 new
    ones) and host 2's 3; the value pass host 0's 2 held pages and 3 of host 1's. (Before, the
    backlog took host 0's whole cap for new pages: [4, 5, 1], host 0's held pages left stale.)"""
    rows, add = pages_adder()
    add(0, 6, kind_code=DISCOVERY, change_rate=0.1, importance=1.0)
    add(0, 2, last_visit_t=NOW - 30, change_rate=0.5, importance=100.0)
    add(1, 5, last_visit_t=NOW - 30, change_rate=0.5, importance=50.0)
    add(2, 3, kind_code=DISCOVERY, change_rate=0.1, importance=5.0)
    pages = columns(rows)
    caps = pa.table({"host": ["h0", "h1", "h2"], "cap": [4.0, 1e6, 1e6], "flagged": [False] * 3})
    urls = page_urls(len(rows))
    settings = backlog_settings(10, 0.5)
    whole, figures = schedule(pages, caps, NOW, settings)
    check_schedule(pages, caps, settings, whole, figures)
    planned = np.array(whole["planned"].to_pylist())
    assert np.flatnonzero(planned[:8]).tolist() == [0, 1, 6, 7]
    assert np.bincount(pages["host_index"][planned], minlength=3).tolist() == [4, 3, 3]
    parts, merged, part_figures = in_parts(pages, caps, urls, settings, ([0, 1], [2]))
    check_parts(whole, figures, merged, part_figures)


def test_listings_due_are_not_counted_among_the_due_candidates_of_a_crawl_in_parts():
    """1,020 due pages and ten due listings over two parts, a budget of 1: the plan reads the
    head of 2 x 1 + 1,024 rows of each part's due candidates, which holds them all."""
    rows = [dict(last_visit_t=NOW - 30, change_rate=0.5, importance=1 + (i % 97) / 97, host_index=i % 2,
                 pending_change=True) for i in range(1020)]
    rows += [dict(last_visit_t=NOW - 3, change_rate=0.5, listing=True, pending_change=True, host_index=i % 2)
             for i in range(10)]
    pages = columns(rows)
    caps = pa.table({"host": ["a", "b"], "cap": [1e6, 1e6], "flagged": [False, False]})
    urls = page_urls(len(rows))
    settings = replace(SETTINGS, daily_fetch_budget=1, exploration_share=0.0, listing_reserve_share=0.0,
                       discovery_share=0.0)
    whole, figures = schedule(pages, caps, NOW, settings)
    check_schedule(pages, caps, settings, whole, figures)
    parts, merged, part_figures = in_parts(pages, caps, urls, settings, ([0], [1]))
    check_parts(whole, figures, merged, part_figures)



def test_a_parts_offer_is_its_head_listings_exploration_and_backlog_with_its_due_refreshes_ranked_in_the_queue():
    """offer_of on a part's arrays. Host 0 (cap 2) has three pages never fetched (gain 0.1) and
    two refreshes: one due (gain 9), one not due (gain 20); host 1 has a due candidate (gain
    1), one not due (gain 0.5) and a listing. The head cut takes due rows of gain 1 and more.
    Host 0's backlog ranks the due refresh with its queue, not the refresh that is not due
    (whatever its gain): the refresh, then its first two new pages (its cap of them). The offer
    holds the head, the listing and the backlog, nothing else; and counts its due candidates
    and the others."""
    from types import SimpleNamespace

    from crawl_assets.pipeline.priorities.plan_offers import HeadCut
    from crawl_assets.pipeline.priorities.url_schedule import offer_of

    n = 8
    rows = np.arange(n)
    part = SimpleNamespace(
        due=np.isin(rows, [3, 5, 7]), gain=np.array([0.1, 0.1, 0.1, 9.0, 20.0, 1.0, 0.5, 0.0]),
        candidate=rows < 7, listing=rows == 7, discovery=rows < 3, refresh=np.isin(rows, [3, 4, 5, 6]),
        host=np.array([0, 0, 0, 0, 0, 1, 1, 1]), cap=np.array([2.0, 10.0]), flagged=np.zeros(2, dtype=bool),
        explore=np.array([], dtype=np.int64), explore_score=np.zeros(n))
    cut = HeadCut(due=-1.0, other=-np.inf)
    offer = offer_of(part, cut, cut, None)
    assert offer.rows[offer.backlog].tolist() == [3, 0, 1]
    assert offer.rows.tolist() == [0, 1, 3, 5, 7]
    assert (offer.due_candidates, offer.other_candidates, offer.listings, offer.complete) == (2, 5, 1, 2)
