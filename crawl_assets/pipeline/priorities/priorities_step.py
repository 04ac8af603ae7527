"""recrawl_priorities step: for every known URL, how often to refetch it, when it is next
due, what fetching it is worth, and the plan for one day within the budgets.

Three kinds of URL share the day's budget (settings.daily_fetch_budget):

- refresh: fetched before; discovery: never fetched. Both are pages to keep fresh: one
  freshness-optimal allocation (refresh_allocation.py) of the whole budget gives each its
  frequency, a never-fetched URL at its pool's prior rate (change_stats' pattern priors, else
  its host's typical rate), each host held to min(max_pages_per_host, 86,400 / delay,
  flagged_host_budget if flagged) fetches a day; next due = last visit + 1/f (a sitemap or
  feed lastmod after the last visit makes it due now); a never-fetched URL is due at once if
  the allocation holds it at all (f > 0);
- gone: the last answers were 404 (retried after not_found_retry_days, doubling per repeat,
  at most not_found_max_days) or 410 (after gone_retry_days; 0 = never); a URL tried but
  never answered with content for a lasting reason (robots.txt refusal, a redirect, another
  4xx: NO_CONTENT_CLASSES) comes back on the 404 interval too, not daily as a new URL.

Importance w = host importance x (1 + in-links). Expected gain, in importance-weighted days
of fresh copy, on one scale for every kind: refresh w (1 - e^{-λτ}) (1 - e^{-λI}) / λ (the
chance the copy is stale after τ days, times the fresh time a fetch buys over the next
interval I = 1/f); discovery (w + h L) (1 - e^{-λI}) / λ (the copy is missing: stale for sure;
L the unknown pages its first fetch is expected to show, known_urls' leads, each of its host's
importance h: they stay unknown until it is fetched); gone that of discovery times GONE_RETURN_ODDS. Under the age objective the stale chance is replaced
by the copy's expected age. The plan (day_plan.py) reads trusted listings first, then revisits
URLs still on their pool's prior where that teaches the pool most (settings.exploration_share),
then never-fetched URLs up to settings.discovery_share (a floor), then every due URL before
early ones, by gain, within each host's cap; its rank cut into len(priority_weights) equal
groups gives the front-queue levels.
Everything is ordered with the URL as the last tie-breaker: the same history gives the same plan.

Here the step, from its inputs to its tables; priority_queries.py joins change_stats and the
known URLs in DuckDB, url_schedule.py works out frequencies, due dates and gains (due_and_gain),
day_plan.py takes the day's plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date as Date, datetime, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...storage.shared_root import write_file_atomic
from .priority_queries import KIND_CODES, SECONDS_A_DAY, STATS_COLUMNS, Kind, host_caps, page_numbers
from .refresh_allocation import OBJECTIVES
from .radix_selection import median_of_parts
from .slices import over_slices
from .url_order import UrlOrder, host_numbers, in_url_order
from .url_schedule import PartSchedule, schedule_parts

DEFAULT_RATE = 1 / 30  # changes a day assumed for a host the crawl has no history of


@dataclass(frozen=True)
class PriorityCounts:
    urls: int
    budget: int
    planned: int
    refresh_planned: int
    discovery_planned: int
    gone_planned: int
    listings_planned: int  # sitemaps and feeds of hosts whose dates are trusted (read first)
    explored: int  # revisits of URLs on their pool's prior, for what they teach the pool
    due: int  # due on the plan date (planned or not)
    capped_hosts: int  # hosts held at their daily cap by the allocation
    price: float  # the marginal freshness of one more fetch a day at the optimum
    expected_freshness: float  # Σ w F(λ, f) / Σ w over refresh URLs, if the rates are right


@dataclass(frozen=True)
class Priorities:
    urls: pa.Table | None  # one row per known URL, ordered by URL (None: written to urls_out)
    counts: PriorityCounts
    hosts: pa.Table  # one row per host: host, cap (fetches a day), planned


def recrawl_priorities(change_stats, inlinks: pa.Table | None, hosts: pa.Table | None,
                       known_urls: pa.Table, plan_date: str | Date, settings, urls_out=None) -> Priorities:
    """Priorities for every known URL and the plan of `plan_date` (the day to be fetched).

    change_stats: change_stats' state files (ChangeStats.state, or url_change_state.url_state),
    or ChangeStats.urls as Arrow or the path of a Parquet file of it (url, host,
    change_rate, last_visit_at, last_fetched_at, last_status, last_status_class, gone_streak,
    pending_change). inlinks: (url, inlinks) or None. hosts:
    (host, delay_s, flagged[, importance][, median_rate]) or None (every host: default_delay_s,
    not flagged, importance 1); median_rate is the median change rate of the host's URLs
    (change_stats' host table), computed from change_stats when the column is absent.
    known_urls: (url, host[, inlinks][, listing][, leads]), every URL the crawl knows, one row per URL,
    best in URL order (recrawl_inputs.known_urls gives them so; any other order is sorted
    first); with inlinks None, its `inlinks` column (if any) gives the in-links; `listing`
    marks the sitemaps and feeds of hosts whose dates are trusted (change_evidence.weigh_listings),
    read first within settings.listing_reserve_share of the budget; `leads`, the unknown pages
    a never-fetched URL's first fetch is expected to show (known_urls), adds their value to its gain.
    urls_out: a Parquet file to stream the URL table to (written under a temporary name and
    renamed; Priorities.urls is then None) instead of returning it as Arrow. Either is in URL order.
    The whole crawl as one part (priorities_of_parts)."""
    crawl = priorities_of_parts([PartInputs(change_stats, inlinks, hosts, known_urls)], plan_date, settings,
                                [urls_out])
    (part,) = crawl.parts
    return Priorities(urls=part.urls, counts=crawl.counts, hosts=part.hosts)


@dataclass(frozen=True)
class PartInputs:
    """recrawl_priorities' inputs for one part of the crawl (a shard's hosts, or all of them):
    known_urls and hosts hold the part's hosts only; only_hosts (the part's host names) keeps
    change_stats to them (None: the whole crawl)."""

    change_stats: object
    inlinks: pa.Table | None
    hosts: pa.Table | None
    known_urls: pa.Table
    only_hosts: pa.Array | None = None


@dataclass(frozen=True)
class CrawlPriorities:
    parts: list[Priorities]  # each part's URLs (or None: written) and hosts; counts: the crawl's
    counts: PriorityCounts


def priorities_of_parts(parts: list[PartInputs], plan_date: str | Date, settings, urls_out=None) -> CrawlPriorities:
    """recrawl_priorities over a crawl held in parts (hosts whole within a part, as shards hold
    them): each part's pages prepared from its own inputs; the crawl's few shared figures (the
    typical change rate, the price, the plan) from the parts' summaries; each part's table of
    its URLs in URL order, the same rows the whole crawl in one part gives. urls_out: a Parquet
    file per part, or None (tables returned). (shard_priorities.py: the same over parts each
    prepared in a process of its own.)"""
    check_objective(settings)
    now = plan_day_number(plan_date)
    prepared = [prepare_part(part, settings) for part in parts]
    everyone = typical_rate([own_rates(p) for p in prepared])
    schedules = [part_schedule(p, everyone, now, settings) for p in prepared]
    columns_of_parts, crawl_figures = schedule_parts(schedules, settings,
                                                     [p.url for p in prepared] if len(parts) > 1 else None)
    outputs, part_counts = [], []
    for i, planned in enumerate(columns_of_parts):
        table, hosts, counts = part_output(prepared[i], schedules[i], planned)
        part_counts.append(counts)
        prepared[i] = schedules[i] = columns_of_parts[i] = None  # (each part's arrays freed once its table is made)
        del planned
        if urls_out is None or urls_out[i] is None:
            urls = plain_strings(table)
        else:
            urls = None
            write_part_urls(table, urls_out[i])
        del table
        outputs.append((urls, hosts))
    counts = crawl_counts(part_counts, settings, crawl_figures)
    return CrawlPriorities(parts=[Priorities(urls=urls, counts=counts, hosts=hosts) for urls, hosts in outputs],
                           counts=counts)


def check_objective(settings) -> None:
    if settings.recrawl_objective not in OBJECTIVES:
        raise ValueError(f"setting recrawl_objective must be one of {OBJECTIVES}, "
                         f"not {settings.recrawl_objective!r}")


def plan_day_number(plan_date: str | Date) -> float:
    """The plan date's midnight (UTC), in days since the epoch."""
    day = Date.fromisoformat(plan_date) if isinstance(plan_date, str) else plan_date
    return datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp() / SECONDS_A_DAY


def part_output(part: PreparedPart, schedule: PartSchedule, planned: dict) -> tuple[pa.Table, pa.Table, dict]:
    """The part's URL table (host and kind dictionary-encoded), its hosts' caps and planned
    fetches, and its counts, from its schedule's output columns (PartSchedule.columns)."""
    columns = part.columns
    per_host = np.bincount(columns["host_index"], weights=planned["planned"].to_numpy(zero_copy_only=False),
                           minlength=len(part.caps))
    hosts = part.caps.select(["host", "cap"]).append_column("planned", pa.array(per_host.astype(np.int64)))
    counts = part_counts(columns["kind_code"], columns["listing"], planned["planned"].to_numpy(zero_copy_only=False),
                          int(schedule.due.sum()))
    kinds = pa.array([k.value for k in KIND_CODES])
    table = pa.table({"url": part.url,
                      "host": pa.DictionaryArray.from_arrays(columns["host_index"], part.host_names),
                      "kind": pa.DictionaryArray.from_arrays(columns["kind_code"], kinds),
                      "change_rate": columns["change_rate"], "importance": columns["importance"], **planned})
    return table, hosts, counts


def plain_strings(table: pa.Table) -> pa.Table:
    """The URL table with its dictionary columns as plain strings (as it reads back from Parquet)."""
    return table.cast(pa.schema([f.with_type(pa.string()) if pa.types.is_dictionary(f.type) else f
                                 for f in table.schema]))


@dataclass
class PreparedPart:
    """One part's pages before the crawl's typical rate is known: its URLs (in URL order),
    their numbers (columns), its hosts (host_names, in host order; caps, host_rates, facts)."""

    url: pa.ChunkedArray
    columns: dict
    host_names: pa.Array
    caps: pa.Table
    host_rates: pa.Table
    facts: pa.Table
    inlinks: np.ndarray


def prepare_part(part: PartInputs, settings) -> PreparedPart:
    if isinstance(part.change_stats, pa.Table):
        _require(part.change_stats, "change_stats", STATS_COLUMNS)
    _require(part.known_urls, "known_urls", {"url", "host"})
    if part.inlinks is not None:
        _require(part.inlinks, "inlinks", {"url", "inlinks"})
    if part.hosts is not None:
        _require(part.hosts, "hosts", {"host", "delay_s", "flagged"})
    known = in_url_order(part.known_urls)
    facts = _host_facts(part.hosts)
    pages, extras, host_rates, inlink_counts = page_numbers(part.change_stats, known, part.inlinks, facts,
                                                            part.only_hosts)
    rows = UrlOrder(known, dict(zip(pages.column_names, pages.columns)), extras)
    del pages
    host_names, host_index = host_numbers(rows.host)
    columns = rows.columns
    columns["host_index"] = host_index
    columns["listing"] = rows.known(_listings(known))
    columns["leads"] = rows.known(_leads(known))
    return PreparedPart(rows.url, columns, host_names, host_caps(host_names, facts, settings), host_rates, facts,
                        rows.known(inlink_counts))


def own_rates(part: PreparedPart) -> np.ndarray:
    """The part's URLs' own change rates (those with an estimate), for the crawl's typical rate."""
    rates = part.columns["own_change_rate"]
    return rates[~np.isnan(rates)]


def part_schedule(part: PreparedPart, everyone: float, now: float, settings) -> PartSchedule:
    """The part's rates (its own, its host's typical, else the crawl's) and importance, scheduled."""
    columns, host_index = part.columns, part.columns["host_index"]
    columns["change_rate"] = _rates_or_typical(columns.pop("own_change_rate"), host_index, everyone,
                                               _per_host(part.host_rates, "median_rate", part.host_names, np.nan))
    host_importance = _per_host(part.facts, "importance", part.host_names, 1.0)
    columns["importance"] = _importance(host_importance, host_index, part.inlinks)
    # the pages a never-fetched URL leads to, each of its host's importance (no in-link known yet)
    columns["lead_weight"] = host_importance[host_index] * columns.pop("leads")
    return PartSchedule(columns, part.caps, now, settings)


# Columns of few distinct values: dictionary pages (the others would try a dictionary and
# fall back, which costs time on every such column); row groups of 2M rows, written 64K rows
# at a time (less time than pyarrow's defaults; bench/README.md).
_DICTIONARY_COLUMNS = ["host", "kind", "next_due", "level"]
_ROW_GROUP_ROWS, _WRITE_BATCH_ROWS = 1 << 21, 1 << 16


def write_part_urls(table: pa.Table, path) -> None:
    """The URL table to Parquet (in the table's order), under a temporary name then renamed.
    pyarrow's writer on one thread costs less than DuckDB's on several: the host and kind
    columns arrive dictionary-encoded (written as such, no hashing of 10M strings) and are
    read back as plain strings (no Arrow schema stored)."""
    write_file_atomic(path, lambda tmp: pq.write_table(
        table, tmp, store_schema=False, use_dictionary=_DICTIONARY_COLUMNS, row_group_size=_ROW_GROUP_ROWS,
        write_batch_size=_WRITE_BATCH_ROWS))


def _listings(known: pa.Table) -> np.ndarray:
    """known's `listing` column as booleans in its order (none without the column)."""
    if "listing" not in known.column_names:
        return np.zeros(len(known), dtype=bool)
    return pc.fill_null(known["listing"], False).to_numpy(zero_copy_only=False).astype(bool)


def _leads(known: pa.Table) -> np.ndarray:
    """known's `leads` column (recrawl_inputs.known_urls) in its order (0 without the column)."""
    if "leads" not in known.column_names:
        return np.zeros(len(known))
    return pc.fill_null(known["leads"], 0.0).to_numpy(zero_copy_only=False).astype(np.float64)


def _per_host(table: pa.Table, column: str, host_names: pa.Array, default: float) -> np.ndarray:
    """table[column] of each host of host_names (its order), `default` for a host not in it or null."""
    found = pc.index_in(host_names, value_set=table["host"].combine_chunks()).to_numpy(zero_copy_only=False)
    values = pc.fill_null(table[column].cast(pa.float64()), default).to_numpy()
    missing = np.isnan(found)
    return np.where(missing, default, values[np.where(missing, 0, found).astype(np.int64)]) if len(values) \
        else np.full(len(host_names), default)


def typical_rate(own_rates: list[np.ndarray]) -> float:
    """Everyone's typical change rate: the median over every URL of the crawl with an estimate
    (each part's own), else DEFAULT_RATE."""
    known_rates = np.concatenate(own_rates) if own_rates else np.zeros(0)
    return _median(known_rates) if len(known_rates) else DEFAULT_RATE


def typical_rate_of_parts(own_rates_of, parts: int) -> float:
    """typical_rate over parts held elsewhere: own_rates_of(i) reads part i's own rates
    (own_rates), called a few times a part, never two parts' at once (median_of_parts)."""
    median = median_of_parts(own_rates_of, parts)
    return DEFAULT_RATE if median is None else median


def _rates_or_typical(own: np.ndarray, host_index: np.ndarray, everyone: float, host_median: np.ndarray) -> np.ndarray:
    """Each URL's change rate: its own estimate (change_stats), else its host's median, else
    everyone's (typical_rate)."""
    typical = np.where(np.isnan(host_median), everyone, host_median)
    rate = np.empty(len(own))

    def fill(part):  # (elementwise, slice by slice on every core)
        np.copyto(rate[part], np.where(np.isnan(own[part]), typical[host_index[part]], own[part]))

    over_slices(len(own), fill)
    return rate


def _importance(host_importance: np.ndarray, host_index: np.ndarray, inlinks: np.ndarray) -> np.ndarray:
    """w = host importance x (1 + in-links), per URL."""
    weight = np.empty(len(host_index))
    over_slices(len(weight), lambda part: np.multiply(host_importance[host_index[part]], 1 + inlinks[part],
                                                      out=weight[part]))
    return weight


def _median(values: np.ndarray) -> float:
    """The median as DuckDB's median() computes it (quantile_cont 0.5: lo + (hi - lo) / 2)."""
    n = len(values)
    lo_at, hi_at = (n - 1) // 2, n // 2
    part = np.partition(values, [lo_at, hi_at])
    lo, hi = part[lo_at], part[hi_at]
    return float(lo + (hi - lo) * 0.5)


def _require(table: pa.Table, name: str, columns: set[str]) -> None:
    missing = columns - set(table.column_names)
    if missing:
        raise ValueError(f"{name} table lacks columns {sorted(missing)}: pass the output of the "
                         f"step that produces it (see recrawl_priorities' docstring)")


def _host_facts(hosts: pa.Table | None) -> pa.Table:
    if hosts is None:
        return pa.table({"host": pa.array([], pa.string()), "delay_s": pa.array([], pa.float64()),
                         "flagged": pa.array([], pa.bool_()), "importance": pa.array([], pa.float64())})
    if "importance" not in hosts.column_names:
        hosts = hosts.append_column("importance", pa.array(np.ones(len(hosts))))
    return hosts.select([c for c in ("host", "delay_s", "flagged", "importance", "median_rate")
                         if c in hosts.column_names])


def part_counts(kind_code: np.ndarray, listing: np.ndarray, planned: np.ndarray, due: int,
                urls: int | None = None) -> dict[str, int]:
    """A part's counts of URLs (PriorityCounts' integer fields but the crawl's figures): kind_code,
    listing and planned over the same rows (every URL of the part, or some holding every planned
    one: then urls, the part's URLs, is given); due: how many of the part's URLs are due."""
    per_kind = {k: int((planned & (kind_code == KIND_CODES.index(k))).sum()) for k in Kind}
    return {"urls": len(planned) if urls is None else urls, "planned": int(planned.sum()), "refresh_planned": per_kind[Kind.REFRESH],
            "discovery_planned": per_kind[Kind.DISCOVERY], "gone_planned": per_kind[Kind.GONE],
            "listings_planned": int((planned & listing).sum()), "due": due}


def crawl_counts(parts: list[dict[str, int]], settings, figures) -> PriorityCounts:
    capped_hosts, price, expected, explored = figures
    summed = {name: sum(part[name] for part in parts) for name in parts[0]} if parts else {}
    assert summed.get("planned", 0) <= settings.daily_fetch_budget
    return PriorityCounts(**summed, budget=settings.daily_fetch_budget, explored=explored,
                          capped_hosts=capped_hosts, price=price, expected_freshness=expected)
