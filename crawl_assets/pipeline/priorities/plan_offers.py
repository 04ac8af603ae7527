"""The day's plan over a crawl held in parts (one per shard): each part offers the head of its
plan order and its exploration order; the offers, merged, are the crawl's orders, and the
plan (day_plan.plan) is taken along them once, as over the whole crawl in one process.

A crawl whose parts are held elsewhere finds its head first (head_cut: its head-th gain, from
the parts' gains alone, by radix selection), and each part offers only its rows within it:
without the cut, a part's head of `head` rows is all its rows once the budget is a tenth of the
crawl (2 x budget rows offered by each of 8 shards), and the crawl's plan held every page.

Why the heads suffice: a part's head of `head` rows (plan_order: its listings, then its due
rows by gain, then the others, each part cut at the `head`-th gain with every row tied with
it) holds every row of the part that the crawl's head of `head` rows holds, since a part has
no more rows above a gain than the crawl has. The crawl's order puts equal gains in URL order,
as the one-process order does (its rows are in URL order), so the merged order is the
one-process order, row for row. Hosts are whole within a part: a host's cap is counted in one
part's rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .radix_selection import smallest_of_parts


@dataclass(frozen=True)
class PlanOffer:
    """What one part offers the crawl's plan; every array but `cap` is over `rows`."""

    rows: np.ndarray  # the part's rows offered (increasing): its head and its exploration order
    head: np.ndarray  # positions in `rows`: the part's plan order, listings first
    listings: int  # how many of `head` are listings (the rest: due rows, then the others)
    due: np.ndarray  # due on the plan date
    gain: np.ndarray
    url: pa.Array
    discovery: np.ndarray
    listing: np.ndarray
    host: np.ndarray  # the part's host numbers (into `cap`)
    cap: np.ndarray  # each of the part's hosts' daily cap
    explore: np.ndarray  # positions in `rows`: the part's exploration order
    explore_score: np.ndarray  # per `explore` entry (higher first)
    backlog: np.ndarray  # positions in `rows`: the part's backlog order (day_plan.backlog_order)
    backlog_key: np.ndarray  # per `backlog` entry: (-days of backlog, not due, -gain) as rows (sorted first)
    due_candidates: int  # the part's candidates (not listings) due on the plan date, in the head or not
    other_candidates: int  # and not due


@dataclass(frozen=True)
class MergedOffers:
    """The crawl's plan inputs over the merged rows (the parts' offered rows, part after part)."""

    order: np.ndarray
    explore: np.ndarray
    discovery: np.ndarray
    listing: np.ndarray
    host: np.ndarray  # the crawl's host numbers (part after part) into `cap`
    cap: np.ndarray
    complete: bool  # the order holds every candidate
    starts: np.ndarray  # each part's first merged row (and the total, last)
    backlog: np.ndarray  # the crawl's backlog order (day_plan.backlog_order), by its key then URL


def merge_offers(offers: list[PlanOffer], head: int) -> MergedOffers:
    """The crawl's plan order and exploration order from its parts' offers (one a part: a crawl
    has one part at the least), each made with `head`."""
    starts = np.cumsum([0] + [len(o.rows) for o in offers])
    host_starts = np.cumsum([0] + [len(o.cap) for o in offers])
    discovery, listing = _joined(offers, "discovery"), _joined(offers, "listing")
    host = np.concatenate([o.host + h for o, h in zip(offers, host_starts)])
    cap = _joined(offers, "cap")
    candidates = sum(o.due_candidates + o.other_candidates for o in offers)
    if len(offers) == 1:  # the part's own orders are the crawl's
        only = offers[0]
        return MergedOffers(only.head, only.explore, discovery, listing, host, cap,
                            len(only.head) - only.listings == candidates, starts, only.backlog)
    gain, url, due = _joined(offers, "gain"), joined_urls([o.url for o in offers]), _joined(offers, "due")
    heads = [o.head + s for o, s in zip(offers, starts)]
    first = np.concatenate([h[:o.listings] for h, o in zip(heads, offers)])
    rest = np.concatenate([h[o.listings:] for h, o in zip(heads, offers)])
    key = 0.0 - gain  # (highest gain first; -0.0 made 0.0, which it equals)
    ordered = [_by_key(first, key, url)]
    left = head
    for part, total in ((rest[due[rest]], sum(o.due_candidates for o in offers)),
                        (rest[~due[rest]], sum(o.other_candidates for o in offers))):
        if left <= 0:
            break
        part = _by_key(part, key, url)
        if left < total:  # the crawl's head: to the left-th gain, with every row tied with it
            part = part[key[part] <= key[part[left - 1]]]
        ordered.append(part)
        left -= len(part)
    order = np.concatenate(ordered)
    scores = np.concatenate([o.explore_score for o in offers])
    explore = np.concatenate([o.explore + s for o, s in zip(offers, starts)])
    explore = explore[_sorted(0.0 - scores, url.take(pa.array(explore)))]
    backlog = np.concatenate([o.backlog + s for o, s in zip(offers, starts)])
    backlog_key = _joined(offers, "backlog_key")
    backlog = backlog[_sorted_by_keys(backlog_key, url.take(pa.array(backlog, pa.int64())))]
    return MergedOffers(order, explore, discovery, listing, host, cap, len(order) - len(first) == candidates, starts,
                        backlog)


class HeadCut(NamedTuple):
    """The crawl's head of its plan order (merge_offers' cut of `head` rows) as plan keys (0.0 -
    gain, lowest first): its due candidates with a key up to `due`, then the others with a key
    up to `other` (inf: all of them; -inf: none), listings aside (always offered). Every row of
    the crawl's head a part holds is within it, and no other row but those tied with its edge."""

    due: float
    other: float


def head_cut(keys_of, parts: int, head: int) -> HeadCut:
    """The cut merge_offers makes at `head` rows, from the parts' keys: keys_of(i, due) gives
    part i's candidates' keys (0.0 - gain; listings left out) due on the plan date (due=True)
    or not; asked a few times a part (radix_selection), never two parts' at once."""
    due_total = sum(len(keys_of(i, True)) for i in range(parts))
    if head < due_total:  # (merge_offers: `left < total`) the head-th due key, no other row
        return HeadCut(smallest_of_parts(lambda i: keys_of(i, True), parts, head - 1), -np.inf)
    left = head - due_total
    other_total = sum(len(keys_of(i, False)) for i in range(parts))
    if left <= 0:
        return HeadCut(np.inf, -np.inf)
    if left < other_total:
        return HeadCut(np.inf, smallest_of_parts(lambda i: keys_of(i, False), parts, left - 1))
    return HeadCut(np.inf, np.inf)


# An Arrow string array holds at most 2 GiB of characters (32-bit offsets); the URLs a crawl of
# 100 million pages offers pass that (8 shards offering 12.5 million each at a budget of 10 million).
STRING_ARRAY_BYTES = 2**31 - 1


def joined_urls(urls: list[pa.Array], limit: int = STRING_ARRAY_BYTES) -> pa.Array:
    """The parts' offered URLs as one array, as large strings once their characters pass `limit`."""
    if sum(pc.sum(pc.binary_length(u)).as_py() or 0 for u in urls) > limit:
        urls = [u.cast(pa.large_string()) for u in urls]
    return pa.concat_arrays(urls)


def _joined(offers: list[PlanOffer], name: str) -> np.ndarray:
    return np.concatenate([getattr(o, name) for o in offers])


def _by_key(rows: np.ndarray, key: np.ndarray, url: pa.Array) -> np.ndarray:
    """rows by key, then URL."""
    return rows[_sorted(key[rows], url.take(pa.array(rows, pa.int64())))]


def _sorted_by_keys(keys: np.ndarray, url: pa.Array) -> np.ndarray:
    """Positions sorting rows of `keys` (columns compared in turn, lowest first), then URL."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    columns = {f"k{i}": keys[:, i] for i in range(keys.shape[1])}
    table = pa.table({**columns, "url": url})
    return pc.sort_indices(table, sort_keys=[(k, "ascending") for k in [*columns, "url"]]).to_numpy()


def _sorted(key: np.ndarray, url: pa.Array) -> np.ndarray:
    if len(key) == 0:
        return np.zeros(0, dtype=np.int64)
    table = pa.table({"key": key, "url": url})
    return pc.sort_indices(table, sort_keys=[("key", "ascending"), ("url", "ascending")]).to_numpy()
