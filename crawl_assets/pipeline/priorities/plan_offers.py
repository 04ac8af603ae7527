"""The day's plan over a crawl held in parts (one per shard): each part offers its rows of the
crawl's head of its plan order, and its exploration and backlog orders; the offers, merged,
are the crawl's orders, and the plan (day_plan.plan) is taken along them once, as over the
whole crawl in one process.

The crawl's head is cut twice, each cut found from the parts' gains alone (head_cut: the
head-th gain, by radix selection over every part's candidates, never two parts' at once):
within `cut` (2 x budget + 1,024 rows at first), every candidate: the rows the value pass
walks; within `reach` (as long, or 4, 16, ... times longer), only the rows the other passes
and the plan's ranks read: never-fetched URLs (the discovery floor walks them in plan order)
and the rows of the exploration and backlog orders. The floor's never-fetched URLs can lie far
down the order (5 % of a crawl's URLs, most of them not due): with one cut, the plan asked for
a head 4 times longer, and at 100 million URLs the coordinator held 80 million rows.

Why the cuts suffice: a part has no more rows above a gain than the crawl has, so each part's
rows within a cut are every row of the crawl's head it holds; the crawl's order puts equal
gains in URL order, as the one-process order does (its rows are in URL order), so the merged
order is the one-process order of the rows offered, row for row: its first `complete_rows` the
crawl's head within `cut`, then the never-fetched, exploration and backlog rows within
`reach`, which is all the floor pass and the ranks read of the crawl's head within `reach`.
The plan is then the plan along that whole head when neither the floor (over the head within
`reach`) nor the value pass (within `cut`) runs short (url_schedule.crawl_plan lengthens the
cut or the reach until so). Hosts are whole within a part: a host's cap is counted in one
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

    rows: np.ndarray  # the part's rows offered (increasing): its head and its exploration and backlog orders
    head: np.ndarray  # positions in `rows`: the part's plan order, listings first
    listings: int  # how many of `head` are listings (the rest: due rows, then the others)
    complete: int  # how many of `head` after its listings are its candidates within the cut (all of them)
    reached: int  # its candidates within the reach (offered or not)
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
    complete: bool  # the order's complete rows are every candidate
    starts: np.ndarray  # each part's first merged row (and the total, last)
    backlog: np.ndarray  # the crawl's backlog order (day_plan.backlog_order), by its key then URL
    complete_rows: int  # the order's first rows: the listings and every candidate within the cut
    reached_all: bool  # the reach holds every candidate


def merge_offers(offers: list[PlanOffer]) -> MergedOffers:
    """The crawl's plan order and exploration order from its parts' offers (one a part: a crawl
    has one part at the least), each made with the same cut and reach."""
    starts = np.cumsum([0] + [len(o.rows) for o in offers])
    host_starts = np.cumsum([0] + [len(o.cap) for o in offers])
    discovery, listing = _joined(offers, "discovery"), _joined(offers, "listing")
    host = np.concatenate([o.host + h for o, h in zip(offers, host_starts)])
    cap = _joined(offers, "cap")
    candidates = sum(o.due_candidates + o.other_candidates for o in offers)
    complete = sum(o.complete for o in offers)
    listings = sum(o.listings for o in offers)
    reached_all = sum(o.reached for o in offers) == candidates
    if len(offers) == 1:  # the part's own orders are the crawl's
        only = offers[0]
        return MergedOffers(only.head, only.explore, discovery, listing, host, cap, complete == candidates, starts,
                            only.backlog, listings + complete, reached_all)
    gain, url, due = _joined(offers, "gain"), joined_urls([o.url for o in offers]), _joined(offers, "due")
    heads = [o.head + s for o, s in zip(offers, starts)]
    first = np.concatenate([h[:o.listings] for h, o in zip(heads, offers)])
    rest = np.concatenate([h[o.listings:] for h, o in zip(heads, offers)])
    key = 0.0 - gain  # (highest gain first; -0.0 made 0.0, which it equals)
    # due rows, then the others, each by key then URL: the rows within the cut come first (every
    # row within it, ties at its edge included, and the others have keys past it)
    order = np.concatenate([_by_key(first, key, url), _by_key(rest[due[rest]], key, url),
                            _by_key(rest[~due[rest]], key, url)])
    scores = np.concatenate([o.explore_score for o in offers])
    explore = np.concatenate([o.explore + s for o, s in zip(offers, starts)])
    explore = explore[_sorted(0.0 - scores, url.take(pa.array(explore)))]
    backlog = np.concatenate([o.backlog + s for o, s in zip(offers, starts)])
    backlog_key = _joined(offers, "backlog_key")
    backlog = backlog[_sorted_by_keys(backlog_key, url.take(pa.array(backlog, pa.int64())))]
    return MergedOffers(order, explore, discovery, listing, host, cap, complete == candidates, starts, backlog,
                        listings + complete, reached_all)


class HeadCut(NamedTuple):
    """The crawl's head of `head` rows of its plan order as plan keys (0.0 - gain, lowest
    first): its due candidates with a key up to `due`, then the others with a key up to `other`
    (inf: all of them; -inf: none), listings aside (always offered), ties at the edge included."""

    due: float
    other: float

    def holds(self, due: np.ndarray, key: np.ndarray) -> np.ndarray:
        """Whether each row (due or not, of plan key `key`) is within the cut."""
        return np.where(due, key <= self.due, key <= self.other)


def head_cut(keys_of, parts: int, head: int) -> HeadCut:
    """The crawl's head of `head` rows, from the parts' keys: keys_of(i, due) gives part i's
    candidates' keys (0.0 - gain; listings left out) due on the plan date (due=True) or not;
    asked a few times a part (radix_selection), never two parts' at once. Due rows come first;
    the head-th row's key, with every row tied with it."""
    due_total = sum(len(keys_of(i, True)) for i in range(parts))
    if head < due_total:  # the head-th due key, no other row
        return HeadCut(_smallest(lambda i: keys_of(i, True), parts, head - 1), -np.inf)
    left = head - due_total
    other_total = sum(len(keys_of(i, False)) for i in range(parts))
    if left <= 0:
        return HeadCut(np.inf, -np.inf)
    if left < other_total:
        return HeadCut(np.inf, _smallest(lambda i: keys_of(i, False), parts, left - 1))
    return HeadCut(np.inf, np.inf)


def _smallest(values_of, parts: int, k: int) -> float:
    """The k-th smallest key: of one part held here, by a partition (the keys are never -0.0)."""
    if parts == 1:
        values = values_of(0)
        return float(np.partition(values, k)[k])
    return smallest_of_parts(values_of, parts, k)


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
