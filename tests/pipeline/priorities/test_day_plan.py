"""The day's plan on small arrays, without DuckDB: the plan order (listings, then due rows, then
the others, by gain, by row), the plan's passes (listings within their reserve, exploration,
the discovery floor with polite hosts' backlogs first, then the rest by value), each host
held to its cap, against a plain loop over the rows that follows the module's rules."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from crawl_assets.crawler.settings import CrawlSettings
from crawl_assets.pipeline.priorities.day_plan import (DISCOVERY_MAX_SHARE, backlog_order, discovery_floor, plan,
                                                       plan_order, within_reach)

# The plan divides and compares where a host has no cap or no backlog: it must not warn.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

SETTINGS = replace(CrawlSettings(), daily_fetch_budget=20, listing_reserve_share=0.1, exploration_share=0.1,
                   discovery_share=0.2, discovery_days=1)


def reference_order(due, gain, candidate, first=None):
    """Every candidate: the `first` rows by gain (due or not), then due rows, then the others,
    each by gain (highest first), then by row."""
    first = np.zeros(len(due), dtype=bool) if first is None else first
    rows = [r for r in range(len(due)) if candidate[r] or first[r]]
    return sorted(rows, key=lambda r: (not first[r], bool(not due[r] and not first[r]), -gain[r], r))


def random_rows(rng, n):
    due = rng.random(n) < 0.4
    gain = rng.integers(0, 12, n) / 4.0  # many ties
    candidate = rng.random(n) < 0.8
    return due, gain, candidate


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_plan_order_is_due_rows_then_the_others_by_gain_then_by_row(seed):
    rng = np.random.default_rng(seed)
    n = 400
    due, gain, candidate = random_rows(rng, n)
    reference = reference_order(due, gain, candidate)
    whole, complete = plan_order(due, gain, candidate, head=n)
    assert whole.tolist() == reference and complete
    for head in (1, 7, 60, int(due[candidate].sum()), int(due[candidate].sum()) + 5, 300):
        order, complete = plan_order(due, gain, candidate, head)
        # the head of the whole order, at least `head` rows: to the head-th gain and every row tied with it
        assert len(order) >= head and order.tolist() == reference[:len(order)]
        last = reference[len(order) - 1]
        if len(order) > head:
            assert (due[last], gain[last]) == (due[reference[head - 1]], gain[reference[head - 1]])
        if len(order) < len(reference):
            following = reference[len(order)]
            assert (due[following], gain[following]) != (due[last], gain[last])
        assert complete == (len(order) == len(reference))
    # listings first, every one of them, by gain, whatever the head
    first = rng.random(n) < 0.05
    order, complete = plan_order(due, gain, candidate, 10, first=first)
    listed = int(first.sum())
    assert order[:listed].tolist() == reference_order(due, gain, candidate, first)[:listed]
    assert order[listed:].tolist() == reference_order(due, gain, candidate & ~first)[:len(order) - listed]
    assert not complete
    empty, complete = plan_order(due, gain, np.zeros(n, dtype=bool), 10)
    assert len(empty) == 0 and complete
    none, complete = plan_order(due, gain, candidate, 0)
    assert len(none) == 0 and not complete


def test_equal_gains_keep_the_row_order_in_long_runs():
    gain = np.repeat([3.0, 1.0, 2.0], 500)[np.random.default_rng(4).permutation(1500)]
    due = np.zeros(1500, dtype=bool)
    order, _ = plan_order(due, gain, np.ones(1500, dtype=bool), 1500)
    assert order.tolist() == sorted(range(1500), key=lambda r: (-gain[r], r))


def reference_floor(never_fetched, settings):
    budget = settings.daily_fetch_budget
    cover = math.ceil(never_fetched / settings.discovery_days) if settings.discovery_days > 0 else 0
    return min(max(round(settings.discovery_share * budget), cover), round(0.5 * budget))


def test_the_discovery_floor_covers_the_known_urls_in_discovery_days_up_to_half_the_budget():
    assert DISCOVERY_MAX_SHARE == 0.5
    budget = replace(SETTINGS, daily_fetch_budget=100, discovery_share=0.05)
    assert discovery_floor(0, budget) == 5  # the share of the budget, at the least
    assert discovery_floor(12, budget) == 12  # every known one tomorrow (discovery_days = 1)
    assert discovery_floor(400, budget) == 50  # at most half the budget
    assert discovery_floor(121, replace(budget, discovery_days=4)) == 31  # 121 in 4 days: 31 a day
    assert discovery_floor(19, replace(budget, discovery_days=4)) == 5
    assert discovery_floor(400, replace(budget, discovery_days=0)) == 5  # 0: no covering, the share alone
    assert discovery_floor(400, replace(budget, discovery_days=0, discovery_share=0.0)) == 0
    assert discovery_floor(400, replace(budget, discovery_share=0.8)) == 50
    for never in range(0, 300, 7):
        for days in (0, 1, 3, 10):
            settings = replace(budget, discovery_days=days)
            assert discovery_floor(never, settings) == reference_floor(never, settings)


def reference_backlog(is_discovery, due, gain, host, cap, held_back, tiebreak=None, held_due=None):
    """Never-fetched rows of hosts (not held back, cap > 0) whose never-fetched rows are more
    than their cap: the longest backlog in days of cap first, then due, by gain, by row (or
    tiebreak); each host's first `cap` of them, and its held_due rows among its first `cap` rows
    of both kinds."""
    count = Counter(int(host[r]) for r in np.flatnonzero(is_discovery))
    backlog = lambda r: count[host[r]] > cap[host[r]] and cap[host[r]] > 0 and not held_back[host[r]]  # noqa: E731
    held_due = np.zeros(len(is_discovery), dtype=bool) if held_due is None else held_due
    rows = [r for r in range(len(is_discovery)) if (is_discovery[r] or held_due[r]) and backlog(r)]
    key = (lambda r: r) if tiebreak is None else (lambda r: tiebreak[r])
    rows.sort(key=lambda r: (not due[r], -gain[r], key(r)))
    both, new, kept = Counter(), Counter(), []
    for r in rows:
        if (new if is_discovery[r] else both)[host[r]] < cap[host[r]]:
            kept.append(r)
        both[host[r]] += 1
        new[host[r]] += bool(is_discovery[r])
    return sorted(kept, key=lambda r: (-count[host[r]] / cap[host[r]], not due[r], -gain[r], key(r)))


@pytest.mark.parametrize("seed", [5, 6])
def test_a_backlog_takes_each_polite_hosts_first_cap_of_urls_the_longest_first(seed):
    rng = np.random.default_rng(seed)
    n, hosts = 600, 12
    due, gain, _ = random_rows(rng, n)
    is_discovery = rng.random(n) < 0.6
    host = rng.integers(0, hosts, n)
    cap = rng.choice([0, 2, 5, 9, 30, 200], hosts).astype(float)
    cap[:2] = [3.0, 6.0]
    host[:1] = 0  # hosts 0 and 1: backlogs of the same length in days (tied)
    held_back = np.zeros(hosts, dtype=bool)
    held_back[rng.integers(0, hosts)] = True
    order = backlog_order(is_discovery, due, gain, host, cap, held_back)
    assert order.tolist() == reference_backlog(is_discovery, due, gain, host, cap, held_back)
    assert len(order) > 20
    tiebreak = rng.permutation(n)
    order = backlog_order(is_discovery, due, gain, host, cap, held_back, tiebreak=tiebreak)
    assert order.tolist() == reference_backlog(is_discovery, due, gain, host, cap, held_back, tiebreak)
    held_due = ~is_discovery & due  # the refreshes due that day, ranked with each host's queue
    order = backlog_order(is_discovery, due, gain, host, cap, held_back, tiebreak=tiebreak, held_due=held_due)
    assert order.tolist() == reference_backlog(is_discovery, due, gain, host, cap, held_back, tiebreak, held_due)
    # every host's queue rows as without them (the plan fills each cap in this order), and held rows among them
    alone = backlog_order(is_discovery, due, gain, host, cap, held_back, tiebreak=tiebreak)
    assert sorted(order[is_discovery[order]].tolist()) == sorted(alone.tolist()) and len(order) > len(alone) + 10


def test_a_polite_hosts_backlog_leaves_room_for_its_own_refreshes_worth_more():
    """Host 0 (cap 4, polite) has 6 pages never fetched (gains 3, 2, 2, 1, 1, 1) and three held
    pages due (gains 10, 5, 0.5); host 1 (cap 200) has 3 never-fetched (4) and 3 held due (6).
    The backlog takes host 0's first 4 rows by gain (10, 5, 3, 2): its held pages worth 10 and
    5 and two new pages, the two new ones counted in the floor. (Before, the backlog took
    all four of host 0's fetches for new pages worth 3 to 1 and its pages worth 10 and 5 waited:
    on the cold-start bench, a page of a tenth of the web's importance on a polite host waited
    eight days behind its host's queue.)"""
    host = np.array([0] * 6 + [0] * 3 + [1] * 3 + [1] * 3, dtype=np.int64)
    is_discovery = np.array([True] * 6 + [False] * 3 + [True] * 3 + [False] * 3)
    gain = np.array([3.0, 2, 2, 1, 1, 1, 10, 5, 0.5, 4, 4, 4, 6, 6, 6])
    due = np.ones(15, dtype=bool)
    cap = np.array([4.0, 200.0])
    order, _ = plan_order(due, gain, np.ones(15, dtype=bool), 100)
    held_back = np.zeros(2, dtype=bool)
    backlog = backlog_order(is_discovery, due, gain, host, cap, held_back, held_due=due & ~is_discovery)
    assert backlog.tolist() == [6, 7, 0, 1, 2, 3]  # (the plan takes host 0's first 4 of them)
    # budget 10: a floor of 5 (the backlog's 2, host 1's 3 new pages), then 5 by value
    settings = replace(SETTINGS, daily_fetch_budget=10, exploration_share=0.0, listing_reserve_share=0.0)
    day = plan(order, is_discovery, host, cap, settings, backlog=backlog)
    assert np.flatnonzero(day.planned).tolist() == [0, 1, 6, 7, 9, 10, 11, 12, 13, 14]
    check_plan(day, reference_plan(order, is_discovery, host, cap, settings, backlog=backlog))
    # without the held pages ranked with the queue: four new pages, host 0's refreshes left out
    backlog = backlog_order(is_discovery, due, gain, host, cap, held_back)
    assert backlog.tolist() == [0, 1, 2, 3]
    day = plan(order, is_discovery, host, cap, settings, backlog=backlog)
    assert np.flatnonzero(day.planned).tolist() == [0, 1, 2, 3, 9, 10, 11, 12, 13, 14]


def test_a_polite_hosts_held_page_the_budget_would_not_buy_leaves_its_cap_to_the_queue():
    """Host 0 (cap 4, polite) has 6 pages never fetched (gains 3, 2, 2, 1, 1, 1) and two held
    pages due (gains 10 and 5); host 1 (cap 200) has ten held pages due worth 6 each. With a
    budget of 10, the plan's order ranks host 0's page worth 5 12th: the budget would not buy
    it by value (ten pages worth more), so it does not take a fetch of host 0's cap from the
    queue, whose waiting costs a day of the whole backlog; its page worth 10 (ranked first) does.
    Host 0 fetches its page worth 10 and three new pages, host 1 six of its ten. (Before, the
    backlog took host 0's four best rows of both kinds: its pages worth 10 and 5 and two new.)"""
    host = np.array([0] * 6 + [0] * 2 + [1] * 10, dtype=np.int64)
    is_discovery = np.array([True] * 6 + [False] * 12)
    gain = np.array([3.0, 2, 2, 1, 1, 1, 10, 5] + [6.0] * 10)
    due = np.ones(18, dtype=bool)
    cap = np.array([4.0, 200.0])
    order, _ = plan_order(due, gain, np.ones(18, dtype=bool), 100)
    assert order.tolist().index(7) == 11
    backlog = backlog_order(is_discovery, due, gain, host, cap, np.zeros(2, dtype=bool), held_due=due & ~is_discovery)
    assert backlog.tolist() == [6, 7, 0, 1, 2, 3]
    assert within_reach(backlog, order, is_discovery, 10).tolist() == [6, 0, 1, 2, 3]
    assert within_reach(backlog, order, is_discovery, 12).tolist() == [6, 7, 0, 1, 2, 3]
    settings = replace(SETTINGS, daily_fetch_budget=10, exploration_share=0.0, listing_reserve_share=0.0)
    day = plan(order, is_discovery, host, cap, settings, backlog=backlog)
    assert np.flatnonzero(day.planned).tolist() == [0, 1, 2, 6, 8, 9, 10, 11, 12, 13]
    assert np.bincount(host[day.planned]).tolist() == [4, 6]
    check_plan(day, reference_plan(order, is_discovery, host, cap, settings, backlog=backlog))
    # a budget of 12 reaches it: the page worth 5 takes a fetch from the queue (its rank 11 < 12)
    day = plan(order, is_discovery, host, cap, replace(settings, daily_fetch_budget=12), backlog=backlog)
    assert np.flatnonzero(day.planned[:8]).tolist() == [0, 1, 6, 7]


def test_a_backlogs_one_held_page_out_of_reach_is_dropped_and_its_new_pages_kept():
    """One held page in the backlog (row 3, ranked last of five at a budget of 2): out of the
    budget's reach, so within_reach drops it; at a budget of 5 it is in reach and kept. The
    never-fetched rows stay whatever their rank."""
    is_discovery = np.array([True, True, False, False, True])
    order = np.array([2, 0, 1, 4, 3])
    backlog = np.array([3, 0, 1, 4])
    assert within_reach(backlog, order, is_discovery, 2).tolist() == [0, 1, 4]
    assert within_reach(backlog, order, is_discovery, 5).tolist() == [3, 0, 1, 4]
    # a held page not in the order at all is out of reach whatever the budget
    assert within_reach(backlog, order[:4], is_discovery, 5).tolist() == [0, 1, 4]


def test_a_host_with_a_day_or_less_of_backlog_has_none():
    host = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    is_discovery = np.array([True, True, True, True, True, False, True, True, True])
    cap = np.array([3.0, 1.0, 0.0, 4.0])  # (host 3: none here)
    gain = np.array([1.0, 2.0, 3.0, 1.0, 2.0, 5.0, 1.0, 1.0, 1.0])
    due = np.zeros(9, dtype=bool)
    # host 0: 3 in a cap of 3 (a day): none; host 1: 2 in a cap of 1: its best; host 2: no cap
    assert backlog_order(is_discovery, due, gain, host, cap, np.zeros(4, dtype=bool)).tolist() == [4]
    # gains next to nothing, still told apart
    assert backlog_order(is_discovery, due, gain * 1e-20, host, cap, np.zeros(4, dtype=bool)).tolist() == [4]
    # two hosts' backlogs as long in days: the better page first, however small the gains
    assert backlog_order(np.ones(4, dtype=bool), np.zeros(4, dtype=bool), np.array([1.0, 0.5, 2.0, 0.1]) * 1e-20,
                         np.array([0, 0, 1, 1]), np.array([1.0, 1.0]), np.zeros(2, dtype=bool)).tolist() == [2, 0]
    assert backlog_order(is_discovery, due, gain, host, cap, np.array([False, True, False, False])).tolist() == []


def reference_plan(order, is_discovery, host, cap, settings, listing=None, explore=(), never_fetched=None,
                   backlog=()):
    """The plan by a loop over the rows: each pass takes its rows in their order while its limit
    and the budget last, a row whose host has its cap skipped."""
    budget = settings.daily_fetch_budget
    listing = np.zeros(len(is_discovery), dtype=bool) if listing is None else listing
    order, explore, backlog = list(order), list(explore), list(backlog)
    # the backlog's held rows only where the budget reaches them in the order
    backlog = [r for r in backlog if is_discovery[r] or (r in order and order.index(r) < budget)]
    never = int(is_discovery.sum()) if never_fetched is None else never_fetched
    listed = [r for r in order if listing[r]]
    floor_rows = [r for r in order if is_discovery[r] and not listing[r] and r not in backlog]
    floor = reference_floor(never, settings)
    # the backlog takes from the floor before exploration; the rest of the floor comes after it
    passes = [(listed, round(settings.listing_reserve_share * budget), True), (backlog, floor, True),
              (explore, round(settings.exploration_share * budget), True), (floor_rows, "rest", False),
              ([r for r in order if not listing[r]], None, False), (listed, None, True)]
    planned, used, short, explored, backlog_taken = set(), Counter(), False, 0, 0
    for number, (rows, limit, whole) in enumerate(passes):
        left = budget - len(planned)
        limit = floor - backlog_taken if limit == "rest" else limit
        limit = left if limit is None else min(limit, left)
        taken = 0
        for r in rows:
            if taken >= limit:
                break
            if r not in planned and used[host[r]] < cap[host[r]]:
                planned.add(r)
                used[host[r]] += 1
                taken += 1
                backlog_taken += bool(number == 1 and is_discovery[r])
        short |= taken < limit and not whole
        explored += taken if number == 2 else 0
    ranked = [r for r in order if r in planned]
    ranked += [r for r in explore if r in planned and r not in order]
    ranked += [r for r in backlog if r in planned and r not in order and r not in explore]
    return sorted(planned), ranked, short, explored


def check_plan(day, expected):
    planned, ranked, short, explored = expected
    assert np.flatnonzero(day.planned).tolist() == planned
    assert day.ranked.tolist() == ranked
    assert (day.short, day.explored) == (short, explored)


@pytest.mark.parametrize("seed", [7, 8, 9, 10])
@pytest.mark.parametrize("budget", [5, 20, 60, 400])
def test_the_plan_takes_its_passes_in_order_within_the_budget_and_the_caps(seed, budget):
    rng = np.random.default_rng(seed)
    n, hosts = 500, 15
    due, gain, candidate = random_rows(rng, n)
    host = rng.integers(0, hosts, n)
    cap = rng.choice([0, 1, 3, 10, 40, 1000], hosts).astype(float)
    is_discovery = rng.random(n) < 0.3
    listing = ~is_discovery & (rng.random(n) < 0.05)
    explore = rng.permutation(np.flatnonzero(~is_discovery & ~listing & ~due))[:30]
    explore = np.r_[explore, np.flatnonzero(listing)[:1]]  # (a listing explored: taken once)
    # (with the hosts' held rows due that day: those the budget does not reach leave the backlog)
    backlog = backlog_order(is_discovery, due, gain, host, cap, np.zeros(hosts, dtype=bool),
                            held_due=due & ~is_discovery & ~listing)
    order, _ = plan_order(due, gain, candidate, n, first=listing)
    settings = replace(SETTINGS, daily_fetch_budget=budget)
    day = plan(order, is_discovery, host, cap, settings, listing, explore, backlog=backlog)
    expected = reference_plan(order, is_discovery, host, cap, settings, listing, explore, backlog=backlog)
    check_plan(day, expected)
    assert day.planned.sum() <= budget
    assert (np.bincount(host[day.planned], minlength=hosts) <= cap).all()
    # more never-fetched URLs in the crawl than these rows: a higher floor
    never = int(is_discovery.sum()) * 3
    day = plan(order, is_discovery, host, cap, settings, listing, explore, never_fetched=never, backlog=backlog)
    check_plan(day, reference_plan(order, is_discovery, host, cap, settings, listing, explore, never, backlog))
    # an order of any kind, without listings, exploration or backlog
    shuffled = rng.permutation(n)[: n // 2]
    day = plan(shuffled, is_discovery, host, cap, settings)
    check_plan(day, reference_plan(shuffled, is_discovery, host, cap, settings))


def test_listings_are_read_first_within_their_reserve_and_after_the_rest_if_budget_is_left():
    # rows 0-3 listings, 4-9 due pages; budget 6, reserve 2: two listings, then the pages, no more
    order = np.arange(10)
    listing = order < 4
    host = np.zeros(10, dtype=np.int64)
    settings = replace(SETTINGS, daily_fetch_budget=6, listing_reserve_share=0.34, discovery_share=0.0,
                       exploration_share=0.0)
    day = plan(order, np.zeros(10, dtype=bool), host, np.array([100.0]), settings, listing)
    assert np.flatnonzero(day.planned).tolist() == [0, 1, 4, 5, 6, 7]
    assert not day.short
    # budget 12: the pages, then the listings past the reserve too
    day = plan(order, np.zeros(10, dtype=bool), host, np.array([100.0]), replace(settings, daily_fetch_budget=12),
               listing)
    assert day.planned.all() and day.ranked.tolist() == list(range(10)) and day.short


def test_the_value_pass_reads_only_the_complete_rows_and_the_floor_the_whole_order():
    """complete_rows (a crawl planned over its parts' offers: past them the order holds only
    the rows the other passes read): the floor takes never-fetched rows from the whole order,
    the value pass stops at complete_rows and is named short if it ran out there."""
    # rows 0-5 held pages, 6-9 never fetched; the order's first 4 rows are complete
    order = np.arange(10)
    is_discovery = order >= 6
    host = np.arange(10, dtype=np.int64)  # a host each: no cap binds
    settings = replace(SETTINGS, daily_fetch_budget=5, discovery_share=0.4, exploration_share=0.0,
                       listing_reserve_share=0.0, discovery_days=0)
    day = plan(order, is_discovery, host, np.full(10, 5.0), settings, complete_rows=4)
    # the floor (2) takes rows 6 and 7 past the complete rows; the value pass rows 0-2 of 0-3
    assert np.flatnonzero(day.planned).tolist() == [0, 1, 2, 6, 7] and day.short_passes == ()
    assert day.ranked.tolist() == [0, 1, 2, 6, 7]
    # a budget of 8 (a floor of 3): the value pass runs out of the 4 complete rows (4 and 5 not read)
    day = plan(order, is_discovery, host, np.full(10, 5.0), replace(settings, daily_fetch_budget=8), complete_rows=4)
    assert np.flatnonzero(day.planned).tolist() == [0, 1, 2, 3, 6, 7, 8] and day.short_passes == ("value",)
    assert day.short
    # without complete_rows the whole order is read
    whole = plan(order, is_discovery, host, np.full(10, 5.0), replace(settings, daily_fetch_budget=8))
    assert np.flatnonzero(whole.planned).tolist() == [0, 1, 2, 3, 4, 6, 7, 8] and not whole.short


def test_the_plan_reaches_past_a_host_at_its_cap_in_a_long_order():
    """2,000 rows of a host capped at one fetch ahead of another host's rows: the plan looks
    past the first 2 x limit + 1,024 rows."""
    host = np.r_[np.zeros(2000, dtype=np.int64), np.ones(10, dtype=np.int64)]
    order = np.arange(2010)
    settings = replace(SETTINGS, daily_fetch_budget=5, discovery_share=0.0, exploration_share=0.0,
                       listing_reserve_share=0.0)
    day = plan(order, np.zeros(2010, dtype=bool), host, np.array([1.0, 100.0]), settings)
    assert np.flatnonzero(day.planned).tolist() == [0, 2000, 2001, 2002, 2003]
    assert not day.short


@pytest.mark.parametrize("hosts", [[3, 7, 11, 12], [5, 70_000, 65_541, 5 + 2 * 65_536, 9]])
def test_caps_hold_for_host_numbers_past_16_bits(hosts):
    """Host numbers past 16 bits (two passes of the radix sort), some alike in their low 16."""
    rng = np.random.default_rng(11)
    n = 3000
    number = rng.integers(0, len(hosts), n)
    host = np.array(hosts)[number]
    cap = rng.choice([1, 2, 5], len(hosts)).astype(float)
    caps = np.zeros(max(hosts) + 1)
    caps[hosts] = cap
    order = rng.permutation(n)
    settings = replace(SETTINGS, daily_fetch_budget=60, discovery_share=0.0, exploration_share=0.0)
    expected = reference_plan(order, np.zeros(n, dtype=bool), number, cap, settings)
    check_plan(plan(order, np.zeros(n, dtype=bool), host, caps, settings), expected)
    check_plan(plan(order, np.zeros(n, dtype=bool), number, cap, settings), expected)
    assert sum(cap) < 60 and len(expected[0]) == sum(cap)
    # the backlog's host order over the same numbers
    discovery, gain, due = np.ones(n, dtype=bool), rng.random(n), np.zeros(n, dtype=bool)
    held_back = np.zeros(len(caps), dtype=bool)
    assert backlog_order(discovery, due, gain, host, caps, held_back).tolist() == \
        reference_backlog(discovery, due, gain, host, caps, held_back)


def test_a_pass_of_one_row_or_a_limit_of_one_takes_it():
    host, cap = np.zeros(3, dtype=np.int64), np.array([5.0])
    one = replace(SETTINGS, daily_fetch_budget=1, discovery_share=0.0, exploration_share=0.0,
                  listing_reserve_share=0.0)
    assert np.flatnonzero(plan(np.array([2, 0, 1]), np.zeros(3, dtype=bool), host, cap, one).planned).tolist() == [2]
    # one listing, read in its reserve
    listing = np.array([False, True, False])
    settings = replace(one, daily_fetch_budget=3, listing_reserve_share=0.34)
    day = plan(np.array([1]), np.zeros(3, dtype=bool), host, cap, settings, listing)
    assert day.planned.tolist() == [False, True, False] and day.ranked.tolist() == [1]


def test_a_backlog_url_in_the_order_too_is_taken_once():
    # host 0 (cap 3): two URLs never fetched, one of them first in the backlog, and a held page
    # that the value pass takes with the room left
    order = np.array([3, 0, 1])
    is_discovery = np.array([True, True, False, False])
    host = np.array([0, 0, 0, 0])
    settings = replace(SETTINGS, daily_fetch_budget=6, discovery_share=0.5, discovery_days=1,
                       exploration_share=0.0, listing_reserve_share=0.0)  # a floor of 3
    day = plan(order, is_discovery, host, np.array([3.0]), settings, backlog=np.array([1]))
    assert np.flatnonzero(day.planned).tolist() == [0, 1, 3]
    assert day.ranked.tolist() == [3, 0, 1]


def test_a_floor_without_enough_urls_never_fetched_is_short():
    """The floor (5) finds two never-fetched URLs in the order: short, though the value pass
    fills the budget (more such URLs may lie past the order's head)."""
    order = np.arange(20)
    is_discovery = order < 2
    settings = replace(SETTINGS, daily_fetch_budget=10, discovery_share=0.5, exploration_share=0.0,
                       listing_reserve_share=0.0)
    day = plan(order, is_discovery, np.zeros(20, dtype=np.int64), np.array([100.0]), settings, never_fetched=40)
    assert day.planned.sum() == 10 and day.short


def test_the_floor_counts_the_crawls_urls_never_fetched_not_only_these_rows():
    order = np.arange(100)
    is_discovery = order >= 60  # 40 of these rows, last in the order
    settings = replace(SETTINGS, daily_fetch_budget=50, discovery_share=0.0, discovery_days=10,
                       exploration_share=0.0, listing_reserve_share=0.0)
    host = np.zeros(100, dtype=np.int64)
    assert plan(order, is_discovery, host, np.array([100.0]), settings).planned[60:].sum() == 4
    assert plan(order, is_discovery, host, np.array([100.0]), settings, never_fetched=200).planned[60:].sum() == 20


@pytest.mark.parametrize("seed", [12, 13])
def test_the_head_of_a_long_order_holds_every_row_tied_with_its_last(seed):
    rng = np.random.default_rng(seed)
    n = 20_000
    due = rng.random(n) < 0.5
    gain = rng.integers(0, 300, n) / 7.0
    candidate = np.ones(n, dtype=bool)
    reference = reference_order(due, gain, candidate)
    for head in (*range(1, n, 211), int(due.sum()) - 1, n - 1):
        order, _ = plan_order(due, gain, candidate, head)
        assert order.tolist() == reference[:len(order)] and len(order) >= head
        last, at_head = reference[len(order) - 1], reference[head - 1]
        assert (due[last], gain[last]) == (due[at_head], gain[at_head])


def test_a_polite_hosts_backlog_takes_its_cap_before_exploration_revisits_its_pages():
    """Host 0 (cap 4) has 10 pages never fetched and 3 pages worth revisiting to learn their
    pool's rate; host 1 (cap 100) has 6 such pages. Exploration (5 a day) takes host 1's
    revisits and none of host 0's: its cap is its backlog's (4 new pages a day), as if only
    its queue bounded how soon its pages can all be had. (Before, exploration came first and
    took three of host 0's four fetches.)"""
    host = np.array([0] * 10 + [0] * 3 + [1] * 6, dtype=np.int64)
    is_discovery = np.arange(19) < 10
    cap = np.array([4.0, 100.0])
    gain = np.r_[np.ones(10), np.full(9, 5.0)]
    due = np.ones(19, dtype=bool)
    order, _ = plan_order(due, gain, np.ones(19, dtype=bool), 100)
    explore = np.arange(10, 19)  # host 0's three revisits first
    backlog = backlog_order(is_discovery, due, gain, host, cap, np.zeros(2, dtype=bool))
    assert backlog.tolist() == [0, 1, 2, 3]
    settings = replace(SETTINGS, daily_fetch_budget=20, exploration_share=0.25, listing_reserve_share=0.0)
    day = plan(order, is_discovery, host, cap, settings, explore=explore, backlog=backlog)
    assert np.flatnonzero(day.planned[host == 0]).tolist() == [0, 1, 2, 3]
    assert day.explored == 5 and np.flatnonzero(day.planned).tolist() == [0, 1, 2, 3, *range(13, 19)]
    check_plan(day, reference_plan(order, is_discovery, host, cap, settings, explore=explore, backlog=backlog))
