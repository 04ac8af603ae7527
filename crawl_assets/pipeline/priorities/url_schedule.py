"""The priorities step's schedule, in numpy over the pages' columns (in URL order): each
refresh URL's fetches a day from the freshness-optimal allocation of the budget
(refresh_allocation.py), when each URL is next due and what fetching it on the plan date is
worth, then the day's plan (day_plan.py), its ranks and front-queue levels."""

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

    budget = settings.daily_fetch_budget
    discovery_budget = min(round(settings.discovery_share * budget), int(discovery.sum()))
    refresh_budget = budget - discovery_budget
    idx = np.flatnonzero(refresh)
    allocation = allocate(rate[idx], weight[idx], host[idx], cap, refresh_budget,
                          objective=settings.recrawl_objective)
    frequency = np.zeros(len(rate))
    frequency[idx] = allocation.frequency
    expected = expected_freshness(rate[idx], weight[idx], allocation.frequency)
    del idx

    # When each URL is next due (day numbers since the epoch, never before today: NaN is
    # never), whether that is today, and the expected gain of fetching it on the plan date.
    mean_interval = int(refresh.sum()) / refresh_budget if refresh_budget > 0 else 1.0
    due_day, gain, due = _due_and_gain_by_slices(pages, frequency, now, max(mean_interval, 1.0), settings)
    # Candidates: due URLs, and refresh URLs the allocation wants (fetched early if budget is left).
    # The plan reads only the head of their order: sort a head long enough for the budget, and
    # a longer one if a pass of the plan ran out of rows before its limit.
    candidate = due | (refresh & (frequency > 0))
    # Sitemaps and feeds of hosts whose dates are trusted: read first, within their reserve.
    listing = pages["listing"].astype(bool, copy=False) & refresh
    head = 2 * settings.daily_fetch_budget + 1024
    while True:
        order, complete = plan_order(due, gain, candidate, head, first=listing)
        planned, short = plan(order, discovery, host, cap, settings, listing)
        if complete or not short:
            break
        head *= 4
    plan_rank = np.zeros(len(rate), dtype=np.int64)
    in_plan = order[planned[order]]  # the planned rows, in plan order
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
    return columns, (len(allocation.capped_hosts), allocation.price, expected)


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
    due_t = np.where(new, now, due_t)
    not_found_wait = np.minimum(settings.not_found_retry_days * 2.0 ** np.maximum(streak - 1, 0),
                                settings.not_found_max_days)
    gone_wait = np.where(status == GONE, settings.gone_retry_days if settings.gone_retry_days > 0 else np.nan,
                         not_found_wait)
    due_t = np.where(gone, last_fetch + gone_wait, due_t)
    interval = np.where(f > 0, 1 / np.where(f > 0, f, 1), 1.0)
    interval = np.where(fresh, interval, mean_interval)
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
