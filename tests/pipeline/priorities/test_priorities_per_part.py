"""The priorities of a crawl held in parts (its hosts split among shards) are the one-process
priorities, row for row: the refresh allocation's one price found from the parts' spends, the
plan from their offers (tests/pipeline/test_day_per_shard.py does the same on a crawled web)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from crawl_assets.crawler.url_policy.sharding import shard_of
from crawl_assets.pipeline.priorities.priorities_step import PartInputs, priorities_of_parts, recrawl_priorities
from crawl_assets.pipeline.priorities.refresh_allocation import AllocationPart, allocate, crawl_log_price
from test_priorities import PLAN_DAY, known, settings, stats_table

HOSTS = 70


def web(seed: int):
    """change_stats of about 1,300 URLs on 60 hosts (some 404s), 120 URLs never fetched, and
    hosts with delays from 1 s to 3,000 s (caps of 28 a day) and a few flagged."""
    rng = np.random.default_rng(seed)
    rows = []
    for h in range(60):
        for p in range(int(rng.integers(1, 40))):
            status = 200 if rng.random() > 0.05 else 404
            rows.append((f"https://h{h}.example/p{p}", float(rng.lognormal(-2, 1.5)), float(rng.uniform(0, 20)),
                         status, int(status == 404)))
    stats = stats_table(rows)
    extra = [f"https://h{h}.example/new{i}" for h in range(0, HOSTS, 3) for i in range(5)]
    urls = known(stats, extra).append_column("inlinks", pa.array(rng.integers(0, 5, len(stats) + len(extra))))
    hosts = pa.table({"host": [f"h{h}.example" for h in range(HOSTS)],
                      "delay_s": [float(rng.choice([1, 5, 3000])) for _ in range(HOSTS)],
                      "flagged": [bool(rng.random() < 0.1) for _ in range(HOSTS)]})
    return stats, urls, hosts


def parts_of(stats, urls, hosts, shards: int) -> list[PartInputs]:
    """The inputs split by shard, as recrawl_inputs.priorities_inputs(shard=...) gives them."""
    parts = []
    for n in range(shards):
        mine = pa.array([h for h in hosts["host"].to_pylist() if shard_of(h, shards) == n], pa.string())
        parts.append(PartInputs(stats, None, hosts.filter(pc.is_in(hosts["host"], mine)),
                                urls.filter(pc.is_in(urls["host"], mine)), mine))
    return parts


@pytest.mark.parametrize("budget", [40, 300, 900, 5000])
def test_priorities_over_shards_are_the_one_process_priorities(budget):
    stats, urls, hosts = web(seed=3)
    config = settings(daily_fetch_budget=budget, shard_count=4)
    whole = recrawl_priorities(stats, None, hosts, urls, PLAN_DAY, config)
    crawl = priorities_of_parts(parts_of(stats, urls, hosts, 4), PLAN_DAY, config)
    merged = pa.concat_tables([part.urls for part in crawl.parts])
    assert merged.take(pc.sort_indices(merged["url"])).equals(whole.urls)
    assert dataclasses.replace(crawl.counts, expected_freshness=0) == \
        dataclasses.replace(whole.counts, expected_freshness=0)
    planned = whole.urls.filter(whole.urls["planned"])
    assert planned.num_rows == min(budget, whole.counts.planned)
    if budget < 1000:  # the budget binds, and every shard has planned URLs
        assert planned.num_rows == budget
        assert len({shard_of(h, 4) for h in planned["host"].to_pylist()}) == 4


def test_the_price_is_the_same_for_every_split_of_the_hosts():
    rng = np.random.default_rng(11)
    pages, hosts = 20_000, 300
    rate = rng.lognormal(-2, 1.5, pages)
    weight = 1 + rng.zipf(2.0, pages)
    host = np.sort(rng.integers(0, hosts, pages))
    cap = rng.choice([2.0, 10.0, 1e9], hosts)
    whole = allocate(rate, weight, host, cap, budget=2_000)
    assert len(whole.capped_hosts) > 0  # some hosts bind
    assert whole.frequency.sum() == pytest.approx(2_000, rel=1e-4)
    for split in (2, 7):
        part_of = rng.integers(0, split, hosts)
        parts = []
        for p in range(split):
            mine = np.flatnonzero(part_of == p)
            rows = np.flatnonzero(np.isin(host, mine))
            parts.append((rows, AllocationPart(rate[rows], weight[rows], np.searchsorted(mine, host[rows]), cap[mine])))
        log_price = crawl_log_price([part for _, part in parts], 2_000)
        assert np.exp(log_price) == whole.price  # to the last bit
        frequency = np.zeros(pages)
        for rows, part in parts:
            frequency[rows] = part.frequencies(log_price, 0.0)[0]
        assert np.array_equal(frequency, whole.frequency)


def test_shards_without_urls_take_no_part_in_the_plan():
    stats, urls, hosts = web(seed=3)
    keep = pa.array(["h1.example", "h2.example", "h4.example"])
    stats, urls, hosts = (table.filter(pc.is_in(table["host"], keep)) for table in (stats, urls, hosts))
    config = settings(daily_fetch_budget=20, shard_count=16)
    whole = recrawl_priorities(stats, None, hosts, urls, PLAN_DAY, config)
    crawl = priorities_of_parts(parts_of(stats, urls, hosts, 16), PLAN_DAY, config)
    assert sorted(part.urls.num_rows for part in crawl.parts)[:13] == [0] * 13  # 3 hosts: 13 empty shards
    merged = pa.concat_tables([part.urls for part in crawl.parts])
    assert merged.take(pc.sort_indices(merged["url"])).equals(whole.urls)
    assert whole.counts.planned == 20


def test_the_sample_the_price_search_brackets_on_is_the_same_for_every_split():
    # 20,000 pages and a sample of 1,000: the search brackets on the sample first; a page is
    # in the sample whatever shard holds it, so every split brackets and finds alike.
    rng = np.random.default_rng(12)
    pages, hosts = 20_000, 300
    rate, weight = rng.lognormal(-2, 1.5, pages), 1 + rng.zipf(2.0, pages)
    host = np.sort(rng.integers(0, hosts, pages))
    cap = rng.choice([2.0, 10.0, 1e9], hosts)
    whole = crawl_log_price([AllocationPart(rate, weight, host, cap)], 2_000, sample=1_000)
    assert abs(whole - crawl_log_price([AllocationPart(rate, weight, host, cap)], 2_000)) < 1e-4
    part_of = rng.integers(0, 5, hosts)
    parts = []
    for p in range(5):
        mine = np.flatnonzero(part_of == p)
        rows = np.flatnonzero(np.isin(host, mine))
        parts.append(AllocationPart(rate[rows], weight[rows], np.searchsorted(mine, host[rows]), cap[mine]))
    assert crawl_log_price(parts, 2_000, sample=1_000) == whole


@pytest.mark.parametrize("budget", [100, 900])
def test_backlogs_of_polite_hosts_are_planned_alike_over_shards(budget):
    # 60 more never-fetched URLs on every other host: those of 3,000 s (28 a day) and the
    # flagged ones have backlogs of more than a day of their cap, which the floor takes first.
    stats, urls, hosts = web(seed=3)
    more = [f"https://h{h}.example/more{i}" for h in range(0, HOSTS, 2) for i in range(60)]
    urls = pa.concat_tables([urls, pa.table({"url": more, "host": [u.split("/")[2] for u in more],
                                             "inlinks": pa.array(np.zeros(len(more), np.int64))})])
    config = settings(daily_fetch_budget=budget, shard_count=4)
    whole = recrawl_priorities(stats, None, hosts, urls, PLAN_DAY, config)
    crawl = priorities_of_parts(parts_of(stats, urls, hosts, 4), PLAN_DAY, config)
    merged = pa.concat_tables([part.urls for part in crawl.parts])
    assert merged.take(pc.sort_indices(merged["url"])).equals(whole.urls)
    # the polite, unflagged hosts with a backlog take the floor (half the budget here) first
    slow = [r["host"] for r in hosts.to_pylist() if r["delay_s"] == 3000 and not r["flagged"]
            and int(r["host"][1:].split(".")[0]) % 2 == 0]
    planned = whole.urls.filter(whole.urls["planned"])["host"].to_pylist()
    assert slow and sum(planned.count(h) for h in slow) >= min(budget // 2, 28 * len(slow))
