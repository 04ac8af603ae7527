"""The priorities step's schedule, in numpy over the pages' columns (in URL order): each
page's fetches a day from the freshness-optimal allocation of the budget
(refresh_allocation.py) over the pages held and the pages known but never fetched alike (a
page we do not hold is a page to hold), when each URL is next due and what fetching it on the
plan date is worth, the pools worth revisiting to learn their rates (exploration), then the
day's plan (day_plan.py), its ranks and front-queue levels."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from .day_plan import plan, plan_order
from .priority_queries import GONE, KIND_CODES, Kind
from .refresh_allocation import AGE, allocate, freshness
from .slices import over_slices

GONE_RETURN_ODDS = 0.1  # a 404/410 page that answers again is worth a tenth of a new one


def schedule(pages: dict, caps: pa.Table, now: float, settings):
    """Frequencies, next-due dates and gains, per URL (numpy over the columns of the pages
    table, in its order); returns the output columns, in that order, and the allocation's figures."""
    # (copy=False: the columns are 10M long; most already have the type)
    rate = pages["change_rate"].astype(np.float64, copy=False)
    weight = pages["importance"].astype(np.float64, copy=False)
    host = pages["host_index"].astype(np.int64, copy=False)
    cap = caps["cap"].to_numpy(zero_copy_only=False).astype(np.float64)
    assert len(cap) == 0 or host.max() < len(cap)
    kind = pages["kind_code"]
    refresh, discovery = (kind == KIND_CODES.index(k) for k in (Kind.REFRESH, Kind.DISCOVERY))

    # One allocation of the whole budget over the pages held (refresh) and those known but
    # never fetched (discovery, at their pool's prior rate): both are pages to keep fresh, so
    # both are priced alike; the day's plan then takes the best fetches of either kind.
    budget = settings.daily_fetch_budget
    held = refresh | discovery
    idx = np.flatnonzero(held)
    allocation = allocate(rate[idx], weight[idx], host[idx], cap, budget, objective=settings.recrawl_objective)
    frequency = np.zeros(len(rate))
    frequency[idx] = allocation.frequency
    del idx
    expected = expected_freshness(rate[refresh], weight[refresh], frequency[refresh])

    # When each URL is next due (day numbers since the epoch, never before today: NaN is
    # never), whether that is today, and the expected gain of fetching it on the plan date.
    mean_interval = int(held.sum()) / budget if budget > 0 else 1.0
    due_day, gain, due = _due_and_gain_by_slices(pages, frequency, now, max(mean_interval, 1.0), settings)
    # Candidates: due URLs, refresh URLs the allocation wants (fetched early if budget is left)
    # and every never-fetched URL. The plan reads only the head of their order: sort a head
    # long enough for the budget, and a longer one if a pass of the plan ran out of rows
    # before its limit.
    candidate = due | (refresh & (frequency > 0)) | discovery
    # Sitemaps and feeds of hosts whose dates are trusted: read first, within their reserve.
    listing = pages["listing"].astype(bool, copy=False) & refresh
    explore = exploration_order(pages, refresh & ~due & ~listing, weight, now)
    head = 2 * settings.daily_fetch_budget + 1024
    while True:
        order, complete = plan_order(due, gain, candidate, head, first=listing)
        day = plan(order, discovery, host, cap, settings, listing, explore)
        if complete or not day.short:
            break
        head *= 4
    planned, in_plan = day.planned, day.ranked
    plan_rank = np.zeros(len(rate), dtype=np.int64)
    plan_rank[in_plan] = np.arange(1, len(in_plan) + 1)
    levels = len(settings.priority_weights)
    level = np.full(len(rate), levels, dtype=np.int32)
    level[in_plan] = 1 + np.arange(len(in_plan)) * levels // max(len(in_plan), 1)
    never = np.isnan(due_day)
    columns = {"frequency": pa.array(frequency),
               # (day numbers since the epoch are date32's own values: no datetime64 detour)
               "next_due": pa.array(np.where(never, 0, due_day).astype(np.int32), mask=never).cast(pa.date32()),
               "expected_gain": pa.array(gain), "due": pa.array(due), "planned": pa.array(planned),
               "plan_rank": pa.array(plan_rank, mask=~planned), "level": pa.array(level)}
    return columns, (len(allocation.capped_hosts), allocation.price, expected, day.explored)


# Exploration: a URL still on its pool's prior (visited once) is worth revisiting for what it
# teaches its pool once it was visited before the plan's day (a revisit the same day would
# say little of a rate of changes a day; the plan's own fetch comes a day after at the least).
EXPLORE_AFTER_DAYS = 0.0


def exploration_order(pages: Mapping[str, np.ndarray], eligible: np.ndarray, weight: np.ndarray,
                      now: float) -> np.ndarray:
    """Rows to revisit for what they teach their pool, best first: the `eligible` rows still
    on their pool's prior (visited once, more than EXPLORE_AFTER_DAYS before the plan's day). A pool whose rate
    is a prior for URLs of much importance and rests on few URLs with intervals of their own
    is worth learning most, and each sample teaches less than the one before: the j-th of a
    pool scores W / (n + j), W the importance of its URLs on the prior, n its URLs with
    intervals (the longest-unvisited first within a pool; the URL order breaks ties)."""
    on_prior = pages["on_prior"].astype(bool, copy=False)
    last_visit = pages["last_visit_t"]
    pool = pages["pool_key"]
    refresh = pages["kind_code"] == KIND_CODES.index(Kind.REFRESH)
    with np.errstate(invalid="ignore"):
        rows = np.flatnonzero(eligible & on_prior & (now - last_visit > EXPLORE_AFTER_DAYS))
    if len(rows) == 0:
        return rows
    # Pools of the candidates: their importance on the prior, and their URLs with intervals.
    keys, inverse = np.unique(pool[rows], return_inverse=True)
    informed = np.flatnonzero(refresh & ~on_prior)
    found = np.searchsorted(keys, pool[informed])
    found = found[(found < len(keys)) & (keys[np.minimum(found, len(keys) - 1)] == pool[informed])]
    evidence = np.bincount(found, minlength=len(keys))
    prior_rows = np.flatnonzero(refresh & on_prior)
    at = np.searchsorted(keys, pool[prior_rows])
    kept = (at < len(keys)) & (keys[np.minimum(at, len(keys) - 1)] == pool[prior_rows])
    importance = np.bincount(at[kept], weights=weight[prior_rows[kept]], minlength=len(keys))
    # Within a pool: the longest-unvisited first, then by row.
    by_pool = np.lexsort((rows, last_visit[rows], inverse))
    sorted_pool = inverse[by_pool]
    start = np.flatnonzero(np.r_[True, sorted_pool[1:] != sorted_pool[:-1]])
    sample = np.arange(len(rows)) - np.repeat(start, np.diff(np.r_[start, len(rows)])) + 1
    score = importance[sorted_pool] / (evidence[sorted_pool] + sample)
    ranked = rows[by_pool]
    return ranked[np.lexsort((ranked, -score))]


# The pages table's columns due_and_gain reads.
DUE_AND_GAIN_COLUMNS = ("change_rate", "importance", "last_visit_t", "last_fetch_t", "gone_streak", "last_status",
                        "pending_change", "event_stale", "kind_code")


def due_and_gain(pages: Mapping[str, np.ndarray], frequency: np.ndarray, now: float, mean_interval: float,
                 settings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(due_day, gain, due) of each page: the day it is next due (days since the epoch, never
    before today; NaN: never), the expected gain of fetching it on the plan date `now` (days
    since the epoch), and whether it is due then. pages: the DUE_AND_GAIN_COLUMNS (visit times
    in days since the epoch, NaN: never); frequency: its fetches a day (refresh pages);
    mean_interval: the days between visits the budget allows on average (for pages that have
    no frequency of their own). Elementwise: the same values whatever the slicing."""
    rate, weight = pages["change_rate"], pages["importance"]
    last_visit, last_fetch = pages["last_visit_t"], pages["last_fetch_t"]  # NaN: never
    streak, status = pages["gone_streak"], pages["last_status"]
    pending = pages["pending_change"].astype(bool, copy=False)
    # the chance the copy went stale in its host's last event (0: none since the copy)
    event = pages["event_stale"] if "event_stale" in pages else np.zeros(len(rate))
    kind = pages["kind_code"]
    f = frequency
    fresh, new, gone = (kind == KIND_CODES.index(k) for k in (Kind.REFRESH, Kind.DISCOVERY, Kind.GONE))
    with np.errstate(divide="ignore", invalid="ignore"):
        due_t = np.where(fresh & (f > 0), last_visit + 1 / f, np.nan)
    due_t = np.where(fresh & (pending | (event > 0)), now, due_t)
    # A page we do not hold is due at once if the allocation would hold it at all (f > 0);
    # else it waits, a candidate by its gain like a held page fetched early.
    due_t = np.where(new & (f > 0), now, due_t)
    not_found_wait = np.minimum(settings.not_found_retry_days * 2.0 ** np.maximum(streak - 1, 0),
                                settings.not_found_max_days)
    gone_wait = np.where(status == GONE, settings.gone_retry_days if settings.gone_retry_days > 0 else np.nan,
                         not_found_wait)
    due_t = np.where(gone, last_fetch + gone_wait, due_t)
    # The interval a fetch buys fresh time over: the allocation's 1/f; a held page it gives
    # nothing to, a day; a page never fetched (or gone) it gives nothing to, the mean interval.
    interval = np.where(f > 0, 1 / np.where(f > 0, f, 1), np.where(fresh, 1.0, mean_interval))
    elapsed = np.where(np.isnan(last_visit), 0.0, np.maximum(now - last_visit, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        fresh_days = np.where(rate > 0, -np.expm1(-rate * interval) / rate, interval)
        if settings.recrawl_objective == AGE:
            stale = np.where(rate > 0, elapsed + np.expm1(-rate * elapsed) / rate, 0.0)  # E[age] now
            stale = np.where(pending, np.maximum(stale, 1.0), np.maximum(stale, event))
        else:
            # P(changed since): by its own rate, or in its host's event
            stale = np.where(pending, 1.0, np.maximum(-np.expm1(-rate * elapsed), event))
    gain = np.nan_to_num(weight * fresh_days * np.where(fresh, stale, np.where(gone, GONE_RETURN_ODDS, 1.0)))
    today = np.floor(now)
    due_day = np.maximum(np.floor(due_t), today)  # overdue URLs are due today
    return due_day, gain, due_day <= today  # NaN (never due) compares False


def _due_and_gain_by_slices(pages: Mapping[str, np.ndarray], frequency: np.ndarray, now: float,
                            mean_interval: float, settings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """due_and_gain of every page, slice by slice on every core (slices.py)."""
    n = len(frequency)
    due_day, gain, due = np.empty(n), np.empty(n), np.empty(n, dtype=bool)

    def fill(part: slice) -> None:
        sliced = {name: pages[name][part] for name in DUE_AND_GAIN_COLUMNS}
        due_day[part], gain[part], due[part] = due_and_gain(sliced, frequency[part], now, mean_interval, settings)

    over_slices(n, fill)
    return due_day, gain, due


def expected_freshness(rate, weight, frequency) -> float:
    """Σ w F(λ, f) / Σ w over the refresh URLs, if the rates are right (summed slice by slice)."""
    if len(rate) == 0:
        return 1.0
    sums = over_slices(len(rate), lambda part: (float((weight[part] * freshness(rate[part], frequency[part])).sum()),
                                                float(weight[part].sum())))
    return sum(s for s, _ in sums) / max(sum(w for _, w in sums), 1e-300)
