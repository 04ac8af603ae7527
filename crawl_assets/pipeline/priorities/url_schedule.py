"""The priorities step's schedule, in numpy over the pages' columns (in URL order): each
page's fetches a day from the freshness-optimal allocation of the budget
(refresh_allocation.py) over the pages held and the pages known but never fetched alike (a
page we do not hold is a page to hold), when each URL is next due and what fetching it on the
plan date is worth, the pools worth revisiting to learn their rates (exploration), then the
day's plan (day_plan.py), its ranks and front-queue levels."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from .day_plan import backlog_order, plan, plan_order
from .plan_offers import HeadCut, PlanOffer, head_cut, merge_offers
from .priority_queries import GONE, KIND_CODES, Kind
from .refresh_allocation import AGE, AllocationPart, crawl_log_price, edge_share, freshness
from .slices import over_slices

GONE_RETURN_ODDS = 0.1  # a 404/410 page that answers again is worth a tenth of a new one


def schedule(pages: dict, caps: pa.Table, now: float, settings):
    """Frequencies, next-due dates and gains, per URL (numpy over the columns of the pages
    table, in its order); returns the output columns, in that order, and the allocation's
    figures. The whole crawl as one part (schedule_parts)."""
    (columns,), figures = schedule_parts([PartSchedule(pages, caps, now, settings)], settings)
    return columns, figures


class PartSchedule:
    """The schedule of one part of the crawl (a shard's URLs, or every URL): what the crawl's
    price search, its plan and its figures ask of the part, each answer from its own pages.
    pages: the part's columns, in URL order; caps: its hosts' (host, cap), host_index into it."""

    def __init__(self, pages: dict, caps: pa.Table, now: float, settings):
        # (copy=False: the columns are 10M long; most already have the type)
        self.pages, self.now, self.settings = pages, now, settings
        self.rate = pages["change_rate"].astype(np.float64, copy=False)
        self.weight = pages["importance"].astype(np.float64, copy=False)
        self.host = pages["host_index"].astype(np.int64, copy=False)
        self.cap = caps["cap"].to_numpy(zero_copy_only=False).astype(np.float64)
        self.flagged = (caps["flagged"].to_numpy(zero_copy_only=False).astype(bool) if "flagged" in caps.column_names
                        else np.zeros(len(self.cap), dtype=bool))
        assert len(self.cap) == 0 or len(self.host) == 0 or self.host.max() < len(self.cap)
        kind = pages["kind_code"]
        self.refresh, self.discovery = (kind == KIND_CODES.index(k) for k in (Kind.REFRESH, Kind.DISCOVERY))
        # One allocation of the whole budget over the pages held (refresh) and those known but
        # never fetched (discovery, at their pool's prior rate): both are pages to keep fresh, so
        # both are priced alike; the day's plan then takes the best fetches of either kind.
        self.held = np.flatnonzero(self.refresh | self.discovery)
        self.allocation = AllocationPart(self.rate[self.held], self.weight[self.held], self.host[self.held],
                                         self.cap, objective=settings.recrawl_objective)

    def price(self, log_price: float, share: float, mean_interval: float) -> None:
        """The part's frequencies, due dates and gains at the crawl's price."""
        self.frequency = np.zeros(len(self.rate))
        self.frequency[self.held], self.capped = self.allocation.frequencies(log_price, share)
        refresh = self.refresh
        self.freshness_sums = freshness_sums(self.rate[refresh], self.weight[refresh], self.frequency[refresh])
        # When each URL is next due (day numbers since the epoch, never before today: NaN is
        # never), whether that is today, and the expected gain of fetching it on the plan date.
        self.due_day, self.gain, self.due = _due_and_gain_by_slices(self.pages, self.frequency, self.now,
                                                                    mean_interval, self.settings)
        # Candidates: due URLs, refresh URLs the allocation wants (fetched early if budget is left)
        # and every never-fetched URL.
        self.candidate = self.due | (refresh & (self.frequency > 0)) | self.discovery
        # Sitemaps and feeds of hosts whose dates are trusted: read first, within their reserve.
        self.listing = self.pages["listing"].astype(bool, copy=False) & refresh
        for name in ("exploration", "explore", "explore_score"):  # (the ranking at the price before, if any)
            self.__dict__.pop(name, None)

    # The exploration order is the plan's only (its offer): found when first asked for, not by
    # every pricing of the part (the coordinator prices each shard twice, each shard's last stage once).
    @cached_property
    def exploration(self) -> tuple[np.ndarray, np.ndarray]:
        """exploration_ranking of the part's refresh URLs not due, listings aside, at its price."""
        return exploration_ranking(self.pages, self.refresh & ~self.due & ~self.listing, self.weight, self.now)

    @cached_property
    def explore(self) -> np.ndarray:
        """The part's exploration order (rows, best first)."""
        return self.exploration[0]

    @cached_property
    def explore_score(self) -> np.ndarray:
        """Per `explore` entry, its score (higher first)."""
        return self.exploration[1]

    def head_keys(self, due: bool) -> np.ndarray:
        """head_keys of the part."""
        return head_keys(self, due)

    def offer(self, cut: HeadCut, reach: HeadCut, urls: pa.Array | None) -> PlanOffer:
        """offer_of the part."""
        return offer_of(self, cut, reach, urls)

    def columns(self, planned_rows: np.ndarray, ranks: np.ndarray, ranked: int) -> dict:
        """The part's output columns: planned_rows (its rows in the crawl's plan) have their
        1-based rank in it (ranks) among the crawl's `ranked` planned rows; the rank cut into
        len(priority_weights) equal groups gives the front-queue levels."""
        n = len(self.rate)
        planned = np.zeros(n, dtype=bool)
        planned[planned_rows] = True
        plan_rank = np.zeros(n, dtype=np.int64)
        plan_rank[planned_rows] = ranks
        levels = len(self.settings.priority_weights)
        level = np.full(n, levels, dtype=np.int32)
        level[planned_rows] = 1 + (ranks - 1) * levels // max(ranked, 1)
        never = np.isnan(self.due_day)
        return {"frequency": pa.array(self.frequency),
                # (day numbers since the epoch are date32's own values: no datetime64 detour)
                "next_due": pa.array(np.where(never, 0, self.due_day).astype(np.int32), mask=never).cast(pa.date32()),
                "expected_gain": pa.array(self.gain), "due": pa.array(self.due), "planned": pa.array(planned),
                "plan_rank": pa.array(plan_rank, mask=~planned), "level": pa.array(level)}


# What a part's offer reads of its priced schedule (offer_of, head_keys): a coordinator keeps
# them between the rounds of the crawl's plan rather than pricing each part again each round.
OFFER_ARRAYS = ("due", "gain", "candidate", "listing", "discovery", "refresh", "host", "cap", "flagged", "explore",
                "explore_score")


def head_keys(part, due: bool) -> np.ndarray:
    """The plan keys (0.0 - gain) of the part's candidates, listings aside, due on the plan date
    (or not): what plan_offers.head_cut asks of the part (its OFFER_ARRAYS: a PartSchedule
    priced, or the arrays kept of one)."""
    rows = part.candidate & ~part.listing & (part.due if due else ~part.due)
    return 0.0 - part.gain[rows]


def offer_of(part, cut: HeadCut, reach: HeadCut, urls: pa.Array | None) -> PlanOffer:
    """The part's rows of the crawl's plan order (plan_offers.py): its listings, its candidates
    within `cut`, and those within `reach` that the floor, the exploration, the backlog and the
    plan's ranks read (never fetched, or in its exploration or backlog order); its exploration
    and backlog orders. part: its OFFER_ARRAYS (a PartSchedule priced, or the arrays kept of
    one); urls: its URLs (needed when the crawl has several parts)."""
    due, gain, host, cap = part.due, part.gain, part.host, part.cap
    backlog = backlog_order(part.discovery, due, gain, host, cap, part.flagged,
                            held_due=part.refresh & due & ~part.listing)
    others = part.candidate & ~part.listing
    key = 0.0 - gain
    within_cut, within_reach = others & cut.holds(due, key), others & reach.holds(due, key)
    read = np.array(part.discovery)  # (the rows the passes but the value pass read past the cut)
    read[part.explore] = True
    read[backlog] = True
    offered = within_cut | (within_reach & read)
    order, _ = plan_order(due, gain, offered | part.listing, len(due), first=part.listing)
    rows = union_of_rows(len(due), order, part.explore, backlog)
    never = np.bincount(host[part.discovery], minlength=len(cap))
    backlog_host = host[backlog]
    backlog_key = np.column_stack([-(never[backlog_host] / np.maximum(cap[backlog_host], 1)),
                                   (~due[backlog]).astype(float), 0.0 - gain[backlog]]) \
        if len(backlog) else np.zeros((0, 3))
    due_candidates = int((others & due).sum())
    return PlanOffer(rows=rows, head=np.searchsorted(rows, order), listings=int(part.listing.sum()),
                     complete=int(within_cut.sum()), reached=int(within_reach.sum()),
                     due=due[rows], gain=gain[rows], url=_urls_of(urls, rows),
                     discovery=part.discovery[rows], listing=part.listing[rows], host=host[rows],
                     cap=np.asarray(cap), explore=np.searchsorted(rows, part.explore),
                     explore_score=np.asarray(part.explore_score), backlog=np.searchsorted(rows, backlog),
                     backlog_key=backlog_key, due_candidates=due_candidates,
                     other_candidates=int(others.sum()) - due_candidates)


def union_of_rows(rows: int, *row_sets: np.ndarray) -> np.ndarray:
    """The rows (of `rows`) in any of row_sets, increasing, as np.union1d gives them, in time
    linear in the rows: np.union1d sorts or hashes, and the offers of a 12.5-million-page shard
    spent most of the crawl's price stage there (issue 39's 100M run)."""
    member = np.zeros(rows, dtype=bool)
    for chosen in row_sets:
        member[chosen] = True
    return np.flatnonzero(member)


def _urls_of(urls, rows: np.ndarray) -> pa.Array:
    """The URLs of `rows` (an empty array without urls) as one string array."""
    if urls is None or len(rows) == 0:
        return pa.array([], pa.string())
    taken = urls.take(pa.array(rows, pa.int64()))
    return (taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken).cast(pa.string())


class CrawlPrice(NamedTuple):
    """The crawl's one price and what each part prices its pages with (PartSchedule.price)."""

    log_price: float
    share: float  # what each page at the price's edge gets (refresh_allocation.edge_share)
    mean_interval: float  # the days between visits the budget allows on average (at least 1)


def crawl_price(allocations: list, held: int, budget: float) -> CrawlPrice:
    """The price at which the parts' hosts take the budget, from the parts' answers alone
    (allocations: each part's AllocationPart, or anything answering as one); held: the
    crawl's pages priced (refresh and discovery)."""
    log_price = crawl_log_price(allocations, budget)
    share = edge_share(allocations, log_price, budget)
    mean_interval = held / budget if budget > 0 else 1.0
    return CrawlPrice(log_price, share, max(mean_interval, 1.0))


def crawl_plan(offers_at, never_fetched: int, settings):
    """The day's plan over the parts' offers: offers_at(head, reach) gives every part's offer
    (PartSchedule.offer) of the crawl's head of `head` rows (every candidate) and of `reach`
    rows (the rows the passes but the value pass read: plan_offers.py). The plan is the plan
    along the crawl's whole head of `reach` rows when no pass runs short: a floor short of
    never-fetched URLs asks for a reach 4 times longer; a value pass short of rows, for a
    head 4 times longer (up to the reach; past it, both). Returns the plan, the offers and
    their merge."""
    # The plan reads only the head of the order: offers long enough for the budget, and longer
    # ones if a pass of the plan ran out of rows before its limit.
    head = reach = 2 * settings.daily_fetch_budget + 1024
    while True:
        offers = offers_at(head, reach)
        merged = merge_offers(offers)
        day = plan(merged.order, merged.discovery, merged.host, merged.cap, settings, merged.listing, merged.explore,
                   never_fetched=never_fetched, backlog=merged.backlog, complete_rows=merged.complete_rows)
        floor_short = "floor" in day.short_passes and not merged.reached_all
        value_short = "value" in day.short_passes and not merged.complete
        if not (floor_short or value_short):
            return day, offers, merged
        if floor_short or head == reach:  # (the value pass short of the whole reach: the reach too is short)
            reach *= 4
        if value_short:
            head = min(4 * head, reach)


def planned_of_parts(day, offers: list[PlanOffer], merged) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each part's planned rows (its own row numbers) and their 1-based ranks in the crawl's plan."""
    rank = np.zeros(len(day.planned), dtype=np.int64)
    rank[day.ranked] = np.arange(1, len(day.ranked) + 1)
    planned = []
    for offer, start in zip(offers, merged.starts):
        mine = np.flatnonzero(day.planned[start:start + len(offer.rows)])
        planned.append((offer.rows[mine], rank[start + mine]))
    return planned


def expected_freshness(sums: list[tuple[float, float]], any_refresh: bool) -> float:
    """Σ w F / Σ w over the parts' refresh pages (PartSchedule.freshness_sums); 1 without any."""
    return sum(s for s, _ in sums) / max(sum(w for _, w in sums), 1e-300) if any_refresh else 1.0


def schedule_parts(parts: list[PartSchedule], settings, urls: list | None = None):
    """The schedule of a crawl held in parts (each a PartSchedule, hosts whole within a part):
    one price for the whole crawl from the parts' spends, then each part's frequencies, due
    dates and gains at it, then one plan over the parts' offers. urls: each part's URLs (in its
    order), needed for more than one part (the plan breaks ties by URL). Returns each part's
    output columns and the crawl's figures (capped hosts, price, expected freshness, explored)."""
    price = crawl_price([part.allocation for part in parts], sum(len(part.held) for part in parts),
                        settings.daily_fetch_budget)
    for part in parts:
        part.price(*price)
    def offers_at(head: int, reach: int) -> list[PlanOffer]:
        cut, reached = (head_cut(lambda i, due: parts[i].head_keys(due), len(parts), rows) for rows in (head, reach))
        return [part.offer(cut, reached, None if urls is None else urls[i]) for i, part in enumerate(parts)]

    day, offers, merged = crawl_plan(offers_at, sum(int(part.discovery.sum()) for part in parts), settings)
    columns = [part.columns(rows, ranks, len(day.ranked))
               for part, (rows, ranks) in zip(parts, planned_of_parts(day, offers, merged))]
    expected = expected_freshness([part.freshness_sums for part in parts], any(part.refresh.any() for part in parts))
    return columns, (sum(len(part.capped) for part in parts), float(np.exp(price.log_price)), expected, day.explored)


# Exploration: a URL still on its pool's prior (visited once) is worth revisiting for what it
# teaches its pool once it was visited before the plan's day (a revisit the same day would
# say little of a rate of changes a day; the plan's own fetch comes a day after at the least).
EXPLORE_AFTER_DAYS = 0.0


def exploration_order(pages: Mapping[str, np.ndarray], eligible: np.ndarray, weight: np.ndarray,
                      now: float) -> np.ndarray:
    """The rows of exploration_ranking, best first."""
    return exploration_ranking(pages, eligible, weight, now)[0]


def exploration_ranking(pages: Mapping[str, np.ndarray], eligible: np.ndarray, weight: np.ndarray,
                        now: float) -> tuple[np.ndarray, np.ndarray]:
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
        return rows, np.zeros(0)
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
    best = np.lexsort((ranked, -score))
    return ranked[best], score[best]


# The pages table's columns due_and_gain reads.
DUE_AND_GAIN_COLUMNS = ("change_rate", "importance", "last_visit_t", "last_fetch_t", "gone_streak", "last_status",
                        "pending_change", "event_stale", "kind_code", "lead_weight")


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
    # the importance of the unknown pages a never-fetched page's first fetch is expected to show
    lead = pages["lead_weight"] if "lead_weight" in pages else np.zeros(len(rate))
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
    # A page we do not hold is worth its own copy and the pages only its links lead to, each
    # as a page we do not hold (known_urls' leads): without its fetch they stay unknown.
    value = np.where(new, weight + lead, weight)
    gain = np.nan_to_num(value * fresh_days * np.where(fresh, stale, np.where(gone, GONE_RETURN_ODDS, 1.0)))
    today = np.floor(now)
    due_day = np.maximum(np.floor(due_t), today)  # overdue URLs are due today
    return due_day, gain, due_day <= today  # NaN (never due) compares False


def _due_and_gain_by_slices(pages: Mapping[str, np.ndarray], frequency: np.ndarray, now: float,
                            mean_interval: float, settings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """due_and_gain of every page, slice by slice on every core (slices.py)."""
    n = len(frequency)
    due_day, gain, due = np.empty(n), np.empty(n), np.empty(n, dtype=bool)

    def fill(part: slice) -> None:
        sliced = {name: pages[name][part] for name in DUE_AND_GAIN_COLUMNS if name in pages}
        due_day[part], gain[part], due[part] = due_and_gain(sliced, frequency[part], now, mean_interval, settings)

    over_slices(n, fill)
    return due_day, gain, due


def freshness_sums(rate, weight, frequency) -> tuple[float, float]:
    """(Σ w F(λ, f), Σ w) over the refresh URLs given (summed slice by slice): their ratio is
    the expected freshness if the rates are right."""
    sums = over_slices(len(rate), lambda part: (float((weight[part] * freshness(rate[part], frequency[part])).sum()),
                                                float(weight[part].sum())))
    return sum(s for s, _ in sums), sum(w for _, w in sums)
