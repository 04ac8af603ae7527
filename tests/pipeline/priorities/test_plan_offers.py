"""The crawl's plan inputs merged from its parts' offers (plan_offers.merge_offers) are the
one-process ones, row for row: the plan order (listings, due rows, then the others, each by
gain then URL, cut at the head's gain with its ties), the exploration and backlog orders, each
row's facts and its host's cap; and so the day's plan taken along them. Small hand-made crawls
with many tied gains, drawn at random (seeded), each split by host among parts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest

from crawl_assets.pipeline.priorities.day_plan import plan
from crawl_assets.pipeline.priorities.plan_offers import head_cut, merge_offers
from crawl_assets.pipeline.priorities.url_schedule import PartSchedule
from test_priorities import settings

HOSTS = 9


@dataclasses.dataclass
class Crawl:
    """A crawl's rows in URL order: what PartSchedule.offer reads of each, and its hosts' caps."""

    url: list[str]
    host: np.ndarray
    due: np.ndarray
    gain: np.ndarray
    candidate: np.ndarray
    listing: np.ndarray
    discovery: np.ndarray
    explore_score: np.ndarray  # NaN: not an exploration row
    cap: np.ndarray
    flagged: np.ndarray


def crawl(seed: int, rows: int = 80) -> Crawl:
    """Gains from a few values (ties within and across parts, 0.0 and -0.0 among them, and
    gains too small to tell apart beside 1.0, as the exploration scores), hosts
    with caps of 0 to 4 (backlogs of never-fetched URLs), one host flagged."""
    rng = np.random.default_rng(seed)
    host = np.sort(rng.integers(0, HOSTS, rows))  # URLs sort by host first, as h0.test/...
    url = [f"https://h{h}.test/p{i:03d}" for i, h in enumerate(host)]
    listing = rng.random(rows) < 0.08
    discovery = ~listing & (rng.random(rows) < 0.35)
    explore = ~listing & ~discovery & (rng.random(rows) < 0.2)
    return Crawl(url=url, host=host, due=rng.random(rows) < 0.4,
                 gain=rng.choice([0.0, -0.0, 1e-20, 3e-20, 0.25, 0.5, 1.0, 3.0], rows),
                 candidate=listing | discovery | (rng.random(rows) < 0.6), listing=listing, discovery=discovery,
                 explore_score=np.where(explore, rng.choice([1e-20, 3e-20, 0.5, 1.0, 2.0], rows), np.nan),
                 cap=rng.integers(0, 5, HOSTS).astype(np.float64), flagged=np.arange(HOSTS) == seed % HOSTS)


def part_schedule(c: Crawl, rows: np.ndarray) -> PartSchedule:
    """The part of `c` holding `rows` (whole hosts, in URL order), as PartSchedule.price leaves
    it; its hosts numbered within it, its exploration order best first, then by URL."""
    hosts, local_host = np.unique(c.host[rows], return_inverse=True)
    part = PartSchedule.__new__(PartSchedule)
    part.due, part.gain, part.candidate = c.due[rows], c.gain[rows], c.candidate[rows]
    part.listing, part.discovery = c.listing[rows], c.discovery[rows]
    part.refresh = ~c.discovery[rows]  # (no gone URLs here): held rows due rank with a backlog
    part.host = local_host.astype(np.int64)
    part.cap, part.flagged = c.cap[hosts], c.flagged[hosts]
    score = c.explore_score[rows]
    explore = np.flatnonzero(~np.isnan(score))
    best = np.lexsort((explore, -score[explore]))
    part.explore, part.explore_score = explore[best], score[explore][best]
    return part


def merged_in_urls(c: Crawl, parts: list[np.ndarray], head: int, reach: int | None = None, budget: int | None = None):
    """merge_offers over the parts' offers of the crawl's head of `head` rows and its reach of
    `reach` (default: head), each merged row named by its URL; and the day's plan of `budget`
    fetches (default: half the head)."""
    schedules = [part_schedule(c, rows) for rows in parts]
    urls = [pa.array([c.url[i] for i in rows]) for rows in parts]
    cut, reached = (head_cut(lambda i, due: schedules[i].head_keys(due), len(parts), rows)
                    for rows in (head, reach or head))
    offers = [s.offer(cut, reached, u) for s, u in zip(schedules, urls)]
    merged = merge_offers(offers)
    crawl_row = np.concatenate([rows[o.rows] for rows, o in zip(parts, offers)]).astype(np.int64)
    names = np.array(c.url, dtype=object)[crawl_row] if len(crawl_row) else np.zeros(0, dtype=object)
    config = settings(daily_fetch_budget=head // 2 if budget is None else budget)
    day = plan(merged.order, merged.discovery, merged.host, merged.cap, config, merged.listing, merged.explore,
               never_fetched=int(c.discovery.sum()), backlog=merged.backlog, complete_rows=merged.complete_rows)
    used = set(merged.order.tolist()) | set(merged.explore.tolist()) | set(merged.backlog.tolist())
    assert list(merged.starts) == list(np.cumsum([0] + [len(o.rows) for o in offers]))
    assert len(merged.discovery) == len(merged.listing) == len(merged.host) == len(crawl_row)
    return {
        "order": list(names[merged.order]), "explore": list(names[merged.explore]),
        "backlog": list(names[merged.backlog]), "complete": merged.complete, "reached_all": merged.reached_all,
        "complete_rows": merged.complete_rows,
        # the facts of each row an order names, and its host's cap through the merged host numbers
        "rows": sorted(fact for i, fact in enumerate(zip(
            names, merged.discovery.tolist(), merged.listing.tolist(), merged.cap[merged.host].tolist(),
            c.host[crawl_row].tolist())) if i in used),
        "hosts": sorted(set(zip(c.host[crawl_row].tolist(), merged.host.tolist()))),
        "planned": list(names[day.ranked]), "short": day.short_passes, "explored": day.explored,
    }


def split(c: Crawl, parts: int, seed: int) -> list[np.ndarray]:
    """The crawl's rows by part, hosts dealt among the parts at random (a part may be empty)."""
    owner = np.random.default_rng(seed + 100).integers(0, parts, HOSTS)
    return [np.flatnonzero(owner[c.host] == n) for n in range(parts)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("head", [2, 7, 12, 20, 200])
@pytest.mark.parametrize("longer", [1, 4])
def test_the_merged_offers_are_the_one_process_plan_inputs_row_for_row(seed, head, longer):
    c = crawl(seed)
    whole = merged_in_urls(c, [np.arange(len(c.url))], head, longer * head)
    for parts in (2, 3):
        by_part = merged_in_urls(c, split(c, parts, seed), head, longer * head)
        # the hosts' numbers are the parts' one after the other: the same hosts, renumbered
        assert len(by_part["hosts"]) == len({h for h, _ in by_part["hosts"]}) == len({n for _, n in by_part["hosts"]})
        whole_hosts = whole.pop("hosts")
        by_part.pop("hosts")
        assert by_part == whole, (parts, head)
        whole["hosts"] = whole_hosts
    # the one-process order is plan_order's (listings first): the merge leaves it alone
    assert whole["order"][:int(c.listing.sum())] == sorted(
        (u for u, first in zip(c.url, c.listing) if first), key=lambda u: -c.gain[c.url.index(u)])


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("head", [4, 8, 12, 20])
def test_a_reach_past_the_head_plans_what_the_whole_reach_plans_unless_the_value_pass_runs_short(seed, head):
    """Past the head, the order holds only the rows the passes but the value pass read (never
    fetched, exploration, backlog): the plan is the plan along the whole reach, in the same
    ranks, whenever the value pass does not run short of the head (crawl_plan then lengthens it)."""
    c = crawl(seed)
    for parts in ([np.arange(len(c.url))], split(c, 3, seed)):
        whole = merged_in_urls(c, parts, 4 * head, 4 * head, budget=head // 2)
        reached = merged_in_urls(c, parts, head, 4 * head, budget=head // 2)
        past = reached["order"][reached["complete_rows"]:]
        known = {u: i for i, u in enumerate(c.url)}
        assert all(c.discovery[known[u]] or u in reached["explore"] or u in reached["backlog"] for u in past)
        assert set(reached["order"]) <= set(whole["order"])
        assert [u for u in whole["order"] if u in set(reached["order"])] == reached["order"]
        if "value" not in reached["short"]:
            assert (reached["planned"], reached["explored"]) == (whole["planned"], whole["explored"])
            assert ("floor" in reached["short"]) == ("floor" in whole["short"])


def test_the_head_is_cut_at_its_last_gain_with_every_row_tied_with_it():
    """Ties at the head's edge across parts: each part offers its tied rows, and the crawl's
    head keeps all of them, in URL order; the rows past the head's gain are left out."""
    url = [f"https://h{h}.test/{p}" for h in range(4) for p in "ab"]
    gain = np.array([3.0, 1.0, 1.0, 0.5, 1.0, 2.0, 1.0, 0.0])
    c = Crawl(url=url, host=np.repeat(np.arange(4), 2), due=np.ones(8, bool), gain=gain,
              candidate=np.ones(8, bool), listing=np.zeros(8, bool), discovery=np.zeros(8, bool),
              explore_score=np.full(8, np.nan), cap=np.full(4, 10.0), flagged=np.zeros(4, bool))
    parts = [np.array([0, 1, 4, 5]), np.array([2, 3, 6, 7])]  # hosts 0 and 2, hosts 1 and 3
    got = merged_in_urls(c, parts, head=3)
    assert got["order"] == [url[0], url[5], url[1], url[2], url[4], url[6]]
    assert got["complete"] is False
    assert got["order"] == merged_in_urls(c, [np.arange(8)], head=3)["order"]
    # the head filled by exactly its due rows: no row that is not due follows
    c.due[[3, 7]] = False
    assert merged_in_urls(c, parts, head=6)["order"] == [url[0], url[5], url[1], url[2], url[4], url[6]]
    assert merged_in_urls(c, parts, head=7)["order"] == [url[0], url[5], url[1], url[2], url[4], url[6], url[3]]
    whole = merged_in_urls(c, parts, head=8)
    assert whole["order"] == [url[0], url[5], url[1], url[2], url[4], url[6], url[3], url[7]]
    assert whole["complete"] is True


def test_the_crawls_head_found_from_the_parts_keys_is_merge_offers_cut():
    """head_cut: the head-th due key (ties at the edge offered, every one), or every due row and
    the others to the (head - due)-th key, or every candidate; -0.0 and 0.0 one gain."""
    url = [f"https://h{h}.test/{p}" for h in range(4) for p in "ab"]
    gain = np.array([3.0, 1.0, 1.0, 0.5, 1.0, 2.0, -0.0, 0.0])
    due = np.array([True, True, True, False, True, True, False, False])
    c = Crawl(url=url, host=np.repeat(np.arange(4), 2), due=due, gain=gain,
              candidate=np.ones(8, bool), listing=np.zeros(8, bool), discovery=np.zeros(8, bool),
              explore_score=np.full(8, np.nan), cap=np.full(4, 10.0), flagged=np.zeros(4, bool))
    parts = [np.array([0, 1, 4, 5]), np.array([2, 3, 6, 7])]
    schedules = [part_schedule(c, rows) for rows in parts]

    def cut(head):  # (as tuples: HeadCut's method aside)
        return tuple(head_cut(lambda i, d: schedules[i].head_keys(d), 2, head))

    assert cut(1) == (-3.0, -np.inf)
    assert cut(3) == cut(4) == (-1.0, -np.inf)  # three rows tied at 1.0: all offered
    assert cut(5) == (np.inf, -np.inf)  # the due rows exactly
    assert cut(6) == (np.inf, -0.5)
    assert cut(7) == (np.inf, 0.0) and cut(8) == (np.inf, np.inf)
    for head in range(1, 10):
        by_part, whole = merged_in_urls(c, parts, head), merged_in_urls(c, [np.arange(8)], head)
        by_part.pop("hosts"), whole.pop("hosts")  # (the hosts renumbered part after part)
        assert by_part == whole, head


def test_the_order_is_complete_when_it_holds_every_candidate_whatever_the_split():
    c = crawl(seed=1)
    c.gain = np.random.default_rng(1).permutation(len(c.url)) / 10  # no ties: a head of n rows holds n
    candidates = int(c.candidate.sum())
    for parts in ([np.arange(len(c.url))], split(c, 2, 1), split(c, 3, 1)):
        assert merged_in_urls(c, parts, head=candidates)["complete"] is True
        assert merged_in_urls(c, parts, head=candidates - int(c.listing.sum()))["complete"] is True
        assert merged_in_urls(c, parts, head=candidates - int(c.listing.sum()) - 1)["complete"] is False


def test_empty_parts_offer_nothing_and_take_no_part():
    c = crawl(seed=2)
    everything = np.arange(len(c.url))
    nothing = np.zeros(0, dtype=np.int64)
    alone = merged_in_urls(c, [everything], head=20)
    for parts in ([nothing, everything], [everything, nothing], [nothing, everything, nothing]):
        assert merged_in_urls(c, parts, head=20) == alone


def test_offered_urls_past_two_gigabytes_are_joined_as_large_strings():
    """(At 100 million URLs the shards' offers hold over 2 GiB of URL characters, more than a
    string array's 32-bit offsets reach: joined as they were, pyarrow refused them.)"""
    from crawl_assets.pipeline.priorities.plan_offers import joined_urls

    parts = [pa.array(["https://h0.test/a", "https://h0.test/b"]), pa.array([], pa.string()),
             pa.array(["https://h1.test/c"])]
    small = joined_urls(parts)
    assert small.type == pa.string() and small.to_pylist() == ["https://h0.test/a", "https://h0.test/b",
                                                               "https://h1.test/c"]
    large = joined_urls(parts, limit=3 * 17 - 1)  # one character short of the three URLs
    assert large.type == pa.large_string() and large.to_pylist() == small.to_pylist()
    assert joined_urls(parts, limit=3 * 17).type == pa.string()


def test_the_offered_rows_are_every_order_s_rows_once_increasing():
    """PartSchedule.offer's rows (its head, exploration and backlog orders) as np.union1d gives
    them, found without a sort (the 100M price stage spent half its time in union1d)."""
    from crawl_assets.pipeline.priorities.url_schedule import union_of_rows

    rng = np.random.default_rng(5)
    for rows in (0, 1, 50, 1000):
        sets = [rng.choice(rows, rng.integers(0, rows + 1), replace=False) if rows else np.zeros(0, np.int64)
                for _ in range(3)]
        sets[1] = sets[1][::-1]  # (orders come by gain, not by row)
        got = union_of_rows(rows, *sets)
        assert got.tolist() == np.union1d(np.union1d(sets[0], sets[1]), sets[2]).tolist()
        assert got.dtype == np.int64


def test_the_merge_says_whether_the_reach_held_every_candidate():
    """reached_all: what tells the crawl's plan that a floor short of never-fetched URLs has
    seen them all (no longer reach would find more: url_schedule.crawl_plan). One part of seven
    candidates (two due) and a listing: a reach of the due rows of gain 1 and more holds two;
    an unbounded one holds all seven."""
    from types import SimpleNamespace

    from crawl_assets.pipeline.priorities.plan_offers import HeadCut, merge_offers
    from crawl_assets.pipeline.priorities.url_schedule import offer_of

    rows = np.arange(8)
    part = SimpleNamespace(
        due=np.isin(rows, [3, 5, 7]), gain=np.array([0.1, 0.1, 0.1, 9.0, 20.0, 1.0, 0.5, 0.0]),
        candidate=rows < 7, listing=rows == 7, discovery=rows < 3, refresh=np.isin(rows, [3, 4, 5, 6]),
        host=np.array([0, 0, 0, 0, 0, 1, 1, 1]), cap=np.array([2.0, 10.0]), flagged=np.zeros(2, dtype=bool),
        explore=np.array([], dtype=np.int64), explore_score=np.zeros(8))
    head, everything = HeadCut(due=-1.0, other=-np.inf), HeadCut(np.inf, np.inf)
    assert not merge_offers([offer_of(part, head, head, None)]).reached_all
    assert merge_offers([offer_of(part, head, everything, None)]).reached_all
