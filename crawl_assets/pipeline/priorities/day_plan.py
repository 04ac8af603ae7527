"""The day's plan, from the schedule's due flags and gains: first the sitemaps and feeds of
hosts whose dates are trusted (cheap signals: what they date after our copy is due the day
after, change_stats' pending_change), within settings.listing_reserve_share of the budget;
then the revisits that teach a pool its rate most (url_schedule.exploration_order), within
settings.exploration_share; then never-fetched URLs up to settings.discovery_share (a floor), those of hosts whose backlog
needs more than a day of their cap first (backlog_order: taken before exploration, so their caps
go to their queues);
then every due URL, never fetched or held alike, before early ones, by expected gain (the URL
order breaking ties); never more than a host's daily cap."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class DayPlan(NamedTuple):
    planned: np.ndarray  # per row: in the day's plan
    ranked: np.ndarray  # the planned rows ranked: those of the order given, then explored rows outside it
    short: bool  # a pass over the order ran out before its limit (rows after it could have been taken)
    explored: int  # rows the exploration pass took
    short_passes: tuple[str, ...] = ()  # the passes that ran out ("floor", "value")


def plan_order(due, gain, candidate, head: int, first=None) -> tuple[np.ndarray, bool]:
    """The first `head` (or a few more) candidate rows in plan order: due first, then by
    expected gain, then by row (= URL order); and whether that is every candidate. Rows of
    `first` (a few: the listings) come before all, every one of them, by gain."""
    if first is not None and first.any():
        rest, complete = plan_order(due, gain, candidate & ~first, head)
        return np.concatenate([_by_gain(np.flatnonzero(first), gain), rest]), complete
    rows = np.flatnonzero(candidate)
    ordered = []
    # Due rows, then the others; each part sorted by gain with a stable sort (so by row among
    # equal gains), after keeping only the rows that can be in the head.
    for part in (rows[due[rows]], rows[~due[rows]]):
        if head <= 0:
            break
        if head < len(part):
            part = _highest_gain(part, gain, head)
        ordered.append(_by_gain(part, gain))
        head -= len(part)
    order = np.concatenate(ordered) if ordered else rows[:0]  # (head <= 0: none)
    return order, len(order) == len(rows)


def _by_gain(rows, gain) -> np.ndarray:
    """`rows` (increasing) by gain, highest first, equal gains in row order: the order of a
    stable sort, from a quicker unstable one whose runs of equal gains are put in row order."""
    key = -gain[rows]
    order = np.argsort(key)
    sorted_key = key[order]
    same = sorted_key[1:] == sorted_key[:-1]
    if same.any():
        tied = np.flatnonzero(np.r_[same, False] | np.r_[False, same])  # runs of equal gains, contiguous
        tied_rows = order[tied]
        order[tied] = tied_rows[np.lexsort((tied_rows, sorted_key[tied]))]
    return rows[order]


def _highest_gain(rows, gain, n: int) -> np.ndarray:
    """The rows (in their order) with the n highest gains, and every row tied with the n-th:
    the head of the stable order by gain is then the same as the whole order's."""
    key = -gain[rows]
    return rows[key <= np.partition(key, n - 1)[n - 1]]


def plan(order, is_discovery, host, cap, settings, listing=None, explore=None, never_fetched=None,
         backlog=None, complete_rows=None) -> DayPlan:
    """The day's plan, taken along `order`: first the listings (`listing` rows, all at the
    head of `order`) within their reserve, then the `backlog` rows (within the discovery
    floor), then the `explore` rows (in their own order, all of them) within the exploration
    share, then the other never-fetched URLs up to what the backlog left of the floor, then
    every other row of `order` (never fetched, refresh and gone together, by value), then
    listings past their reserve; never more than a host's cap (DayPlan says what it returns).
    never_fetched: the crawl's never-fetched URLs, for the discovery floor (default: the
    is_discovery rows; a crawl planned over its parts' offers has more than those).
    backlog: rows (in their own order, backlog_order) the floor takes first, before exploration:
    never-fetched ones, and held ones of their hosts that rank above them (not counted in the
    floor), of which only those within_reach of the budget.
    complete_rows: the value pass reads only the first complete_rows of `order` (default: all):
    past them a crawl planned over its parts' offers holds only the rows the other passes read
    (plan_offers.py), and the value pass runs short there instead."""
    budget = settings.daily_fetch_budget
    planned = np.zeros(len(is_discovery), dtype=bool)
    used = np.zeros(len(cap), dtype=np.int64)
    listed = listing[order] if listing is not None else np.zeros(len(order), dtype=bool)
    discovery = is_discovery[order] & ~listed
    floor = discovery_floor(int(is_discovery.sum()) if never_fetched is None else never_fetched, settings)
    reserve = round(settings.listing_reserve_share * budget)
    exploring = round(settings.exploration_share * budget)
    explore = order[:0] if explore is None else explore
    backlog = order[:0] if backlog is None else within_reach(backlog, order[:complete_rows], is_discovery, budget)
    in_backlog = np.zeros(len(is_discovery), dtype=bool)
    in_backlog[backlog] = True
    short_passes = ()
    taken_by = {}
    # (name, rows, limit, whole): the backlog is the floor's first part, taken before exploration
    # so that a polite host's cap goes to its queue of pages we do not have (backlog_order).
    passes = (("listings", order[listed], reserve, True), ("backlog", backlog, floor, True),
              ("explore", explore, exploring, True), ("floor", order[discovery & ~in_backlog[order]], None, False),
              ("value", order[:complete_rows][~listed[:complete_rows]], None, False),
              ("listings_after", order[listed], None, True))
    for name, rows, limit, whole in passes:
        left = budget - int(planned.sum())
        if name == "floor":  # what the backlog left of the floor
            limit = floor - taken_by["backlog"]
        limit = left if limit is None else min(limit, left)
        rows = rows[~planned[rows]]
        taken = _take_within_caps(rows, host, cap, used, limit)
        if len(taken) < limit and not whole:  # (every listing is in `order`)
            short_passes += (name,)
        planned[taken] = True
        # (the backlog's held rows, a polite host's refreshes worth more than its queue, are not the floor's)
        taken_by[name] = int(is_discovery[taken].sum()) if name == "backlog" else len(taken)
        used += np.bincount(host[taken], minlength=len(cap))
    explored = taken_by["explore"]
    assert planned.sum() <= budget and (used <= cap).all()
    ranked = order[planned[order]]
    outside = np.ones(len(planned), dtype=bool)
    outside[order] = False
    ranked = np.concatenate([ranked, explore[planned[explore] & outside[explore]]])
    outside[explore] = False
    ranked = np.concatenate([ranked, backlog[planned[backlog] & outside[backlog]]])
    assert len(ranked) == planned.sum()
    return DayPlan(planned, ranked, bool(short_passes), explored, short_passes)


def within_reach(backlog, order, is_discovery, budget: int) -> np.ndarray:
    """The backlog's rows (in their order) but its held ones the budget would not reach by value
    (ranked `budget` or later in `order`, or not in it): whether a held page is worth a fetch
    at all is the budget's to say, the backlog only keeps the room of those it would take."""
    held = np.flatnonzero(~is_discovery[backlog])
    if len(held) == 0:
        return backlog
    position = np.full(len(is_discovery), budget, dtype=np.int64)  # (not in the order: out of reach)
    position[order] = np.arange(len(order))
    out = held[position[backlog[held]] >= budget]
    return np.delete(backlog, out)


# The floor of never-fetched URLs: at most this share of the budget covers the known ones in
# settings.discovery_days (a new crawl learns its web fast; the rest of the budget is the value
# pass's, where new URLs compete too).
DISCOVERY_MAX_SHARE = 0.5


def discovery_floor(never_fetched: int, settings) -> int:
    """Fetches a day kept for never-fetched URLs: settings.discovery_share of the budget, or
    what fetches the known ones in settings.discovery_days, up to DISCOVERY_MAX_SHARE of it."""
    budget = settings.daily_fetch_budget
    cover = -(-never_fetched // settings.discovery_days) if settings.discovery_days > 0 else 0
    return min(max(round(settings.discovery_share * budget), cover), round(DISCOVERY_MAX_SHARE * budget))


def backlog_order(is_discovery, due, gain, host, cap, held_back, tiebreak=None, held_due=None) -> np.ndarray:
    """The never-fetched rows the discovery floor takes first: those of hosts whose never-fetched
    URLs need more than a day of their cap, the longest backlog (in days of cap) first, each
    host's first `cap` never-fetched rows (due, then by gain, then by row or `tiebreak`), and its
    held rows due on the plan date (held_due) among its first `cap` rows of both kinds. Only its
    own cap bounds how soon a polite host's queue can be fetched, and a day its cap goes unused
    is lost, while other hosts' pages can wait a day; so this finishes every host's queue
    soonest. But the same cap is its held pages' only way to be refreshed: a due refresh worth
    more than the queue's pages is planned with it, before it, if the budget reaches it
    (plan keeps those within_reach; the queue's next rows fill the cap in place of the others;
    plan counts only the never-fetched against the floor).
    Hosts held_back (flagged for traps or demoted: they keep their small budget) are left out."""
    count = np.bincount(host[is_discovery], minlength=len(cap))
    backlog = (count > cap) & (cap > 0) & ~held_back
    rows = np.flatnonzero(is_discovery & backlog[host])
    if len(rows) == 0:
        return rows
    competing = rows[:0] if held_due is None else np.flatnonzero(held_due & ~is_discovery & backlog[host])
    ranked = np.concatenate([rows, competing])
    # per host (a host's rows contiguous after the sort): its first `cap` never-fetched rows, and
    # its held rows among its first `cap` rows of either kind
    keys = (ranked if tiebreak is None else tiebreak[ranked], 0.0 - gain[ranked], ~due[ranked], host[ranked])
    ranked = ranked[np.lexsort(keys)]
    new = is_discovery[ranked]
    rank = np.where(new, _rank_in_host(ranked, host, new), _rank_in_host(ranked, host))
    kept = ranked[rank < cap[host[ranked]]]
    days = count[host[kept]] / cap[host[kept]]
    keys = (kept if tiebreak is None else tiebreak[kept], 0.0 - gain[kept], ~due[kept], -days)
    return kept[np.lexsort(keys)]


def _rank_in_host(rows, host, among=None) -> np.ndarray:
    """Each row's rank within its host among the `among` rows before it (all rows: None); `rows`
    hold each host's rows contiguous. (Rows outside `among` get the rank of the next one.)"""
    hosts = host[rows]
    counted = np.ones(len(rows), dtype=np.int64) if among is None else among.astype(np.int64)
    before = np.cumsum(counted) - counted
    first = np.flatnonzero(np.r_[True, hosts[1:] != hosts[:-1]])
    return before - np.repeat(before[first], np.diff(np.r_[first, len(rows)]))


def _take_within_caps(rows, host, cap, used, limit) -> np.ndarray:
    """The first `limit` of `rows` (in their order) whose host has room left."""
    if limit <= 0 or len(rows) == 0:
        return rows[:0]
    # A row's room depends only on the rows before it: look at a prefix, longer if it falls short.
    prefix = min(len(rows), 2 * limit + 1024)
    while True:
        taken = _within_caps(rows[:prefix], host, cap, used)
        if len(taken) >= limit or prefix == len(rows):
            return taken[:limit]
        prefix = min(len(rows), 4 * prefix)


def _within_caps(rows, host, cap, used) -> np.ndarray:
    """The rows (in their order) whose host has room left after the rows before them."""
    hosts = host[rows]
    by_host = _stable_order(hosts)  # keeps the plan order within each host
    sorted_hosts = hosts[by_host]
    first = np.flatnonzero(np.r_[True, sorted_hosts[1:] != sorted_hosts[:-1]])
    rank = np.empty(len(rows), dtype=np.int64)
    rank[by_host] = np.arange(len(rows)) - np.repeat(first, np.diff(np.r_[first, len(rows)]))
    room = rank < cap[hosts] - used[hosts]
    return rows[room]


def _stable_order(hosts: np.ndarray) -> np.ndarray:
    """np.argsort(hosts, kind="stable") for host numbers: two passes of numpy's radix sort
    on 16 bits each (quicker than the merge sort it takes for 64-bit numbers). Host numbers
    index the caps' array: 0 <= host < 2^32."""
    low = np.argsort((hosts & 0xFFFF).astype(np.uint16), kind="stable")
    return low[np.argsort((hosts[low] >> 16).astype(np.uint16), kind="stable")]
