"""The priorities per shard in three stages, each as its own process runs it (shard_priorities.py:
each shard's summary written and read back, the crawl's price and plan from the summaries,
each shard's table at that price) are the one-process priorities, row for row, shards without
URLs and a plan that asks the shards again for longer offers included; and the crawl's typical change rate
found over the shards one at a time is the one-process median."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from crawl_assets.pipeline.priorities.priorities_step import (
    plain_strings, prepare_part, recrawl_priorities, typical_rate, typical_rate_of_parts,
)
from crawl_assets.pipeline.priorities.shard_priorities import (
    part_tables, plan_json, plan_of_shards, planned_rows, read_plan, shard_priorities, write_part,
)
from crawl_assets.pipeline.priorities import url_schedule
from crawl_assets.pipeline.priorities.url_schedule import PartSchedule
from test_priorities import PLAN_DAY, settings
from test_priorities_per_part import parts_of, web


def in_stages(parts, config, folder):
    """The three stages over `parts` (one a shard), their files under `folder`; the crawl plan
    and each shard's table in plain strings."""
    shards = [f"s{n:02d}" for n in range(len(parts))]
    folders = {shard: folder / shard for shard in shards}
    for shard, part in zip(shards, parts):
        write_part(part_tables(prepare_part(part, config), part.hosts), folders[shard])
    crawl = plan_of_shards(folders, PLAN_DAY, config)
    figures, rows = plan_json(crawl), planned_rows(crawl)
    tables = [plain_strings(shard_priorities(folders[shard], read_plan(figures, rows, shard), shard, PLAN_DAY,
                                             config).urls) for shard in shards]
    return crawl, tables


@pytest.mark.parametrize(("budget", "shards"), [(40, 4), (900, 4), (300, 16)])
def test_the_stages_plan_what_one_process_plans(tmp_path, budget, shards):
    stats, urls, hosts = web(seed=3)
    config = settings(daily_fetch_budget=budget, shard_count=shards)
    whole = recrawl_priorities(stats, None, hosts, urls, PLAN_DAY, config)
    crawl, tables = in_stages(parts_of(stats, urls, hosts, shards), config, tmp_path)
    merged = pa.concat_tables(tables)
    assert merged.take(pc.sort_indices(merged["url"])).equals(whole.urls)
    assert dataclasses.replace(crawl.counts, expected_freshness=0) == \
        dataclasses.replace(whole.counts, expected_freshness=0)
    assert crawl.counts.expected_freshness == pytest.approx(whole.counts.expected_freshness, rel=1e-12)
    if budget <= 300:  # the budget binds
        assert crawl.counts.planned == budget


def test_shards_without_urls_take_no_part(tmp_path):
    stats, urls, hosts = web(seed=3)
    keep = pa.array(["h1.example", "h2.example", "h4.example"])
    stats, urls, hosts = (table.filter(pc.is_in(table["host"], keep)) for table in (stats, urls, hosts))
    config = settings(daily_fetch_budget=20, shard_count=16)
    whole = recrawl_priorities(stats, None, hosts, urls, PLAN_DAY, config)
    crawl, tables = in_stages(parts_of(stats, urls, hosts, 16), config, tmp_path)
    assert sorted(table.num_rows for table in tables)[:13] == [0] * 13  # 3 hosts: 13 empty shards
    merged = pa.concat_tables(tables)
    assert merged.take(pc.sort_indices(merged["url"])).equals(whole.urls)
    assert crawl.counts.planned == whole.counts.planned == 20


def merged_rounds(monkeypatch) -> list[dict]:
    """Each round of the crawl's plan (url_schedule.crawl_plan) as it merges the shards' offers:
    the rows of its order, those within the head, and the candidates (filled as the stages run)."""
    rounds = []
    merge = url_schedule.merge_offers

    def merging(offers):
        merged = merge(offers)
        rounds.append({"order": len(merged.order), "head": merged.complete_rows, "reach": sum(o.reached for o in offers),
                       "candidates": sum(o.due_candidates + o.other_candidates for o in offers)})
        return merged

    monkeypatch.setattr(url_schedule, "merge_offers", merging)
    return rounds


def web_with_more(more_a_host: int, inlinks):
    """web(3) and `more_a_host` never-fetched URLs on each of its first 8 hosts, with `inlinks`."""
    stats, urls, hosts = web(seed=3)
    more = [f"https://h{h}.example/more{i}" for h in range(8) for i in range(more_a_host)]
    urls = pa.concat_tables([urls, pa.table({"url": more, "host": [u.split("/")[2] for u in more],
                                             "inlinks": pa.array(inlinks(len(more)), pa.int64())})])
    return stats, urls, hosts


def test_a_plan_that_asks_the_shards_again_for_longer_offers(tmp_path, monkeypatch):
    # 3,000 more never-fetched URLs with many in-links on each of 8 hosts, 5 a host a day: the
    # offers' head (2 x budget + 1,024 rows) is mostly those hosts' URLs, the plan's passes run
    # out of rows within the caps, and the coordinator asks every shard again for a longer head.
    stats, urls, hosts = web_with_more(3000, lambda n: np.full(n, 50))
    config = settings(daily_fetch_budget=300, shard_count=4, max_pages_per_host=5)
    whole = recrawl_priorities(stats, None, hosts, urls, PLAN_DAY, config)
    rounds = merged_rounds(monkeypatch)
    crawl, tables = in_stages(parts_of(stats, urls, hosts, 4), config, tmp_path)
    assert len(rounds) == 3  # every shard asked three times, for longer heads (all rows here are never fetched)
    assert rounds[0]["head"] < rounds[1]["head"] < rounds[2]["head"] == rounds[2]["candidates"]
    merged = pa.concat_tables(tables)
    assert merged.take(pc.sort_indices(merged["url"])).equals(whole.urls)
    assert crawl.counts.planned == whole.counts.planned == 300


@pytest.mark.parametrize("cap", [2, 4])
def test_the_shards_offer_the_crawls_head_only_and_plan_as_one_process_with_caps_binding(tmp_path, monkeypatch, cap):
    # 1,500 more never-fetched URLs on each of 8 hosts, in-links of 0 to 60: 12,900 candidates, a
    # head of 1,264 rows (a budget of 120) whose edge falls among those hosts' URLs, whose caps
    # of a few a day bind: the plan passes over most of the head, and each shard offers only
    # its rows of the crawl's head (every shard has more rows than the head), not its own head.
    # (A floor of 60: at a cap of 2 the hosts' backlogs give 54 of it, the rest is past the head.)
    stats, urls, hosts = web_with_more(1500, lambda n: np.random.default_rng(cap).integers(0, 61, n))
    config = settings(daily_fetch_budget=120, shard_count=4, max_pages_per_host=cap)
    whole = recrawl_priorities(stats, None, hosts, urls, PLAN_DAY, config)
    rounds = merged_rounds(monkeypatch)
    crawl, tables = in_stages(parts_of(stats, urls, hosts, 4), config, tmp_path)
    # each round the shards offered the crawl's head (1,264 rows, and those tied with its last)
    # and, past it, the rows of the reach the floor reads: the floor ran short of never-fetched
    # URLs in the first head, and the plan asked for a longer reach
    assert rounds[0]["order"] == rounds[0]["head"] < 1264 + 120 and len(rounds) > 1
    assert all(r["head"] <= r["order"] <= r["reach"] for r in rounds)
    if cap == 2:  # the value pass filled the budget within the first head: only the reach grew
        assert [r["head"] for r in rounds] == [rounds[0]["head"]] * len(rounds)
        assert rounds[-1]["order"] < rounds[-1]["reach"]
    merged = pa.concat_tables(tables)
    assert merged.take(pc.sort_indices(merged["url"])).equals(whole.urls)
    assert crawl.counts.planned == whole.counts.planned
    planned_a_host = pc.value_counts(whole.urls.filter(whole.urls["planned"])["host"]).field("counts")
    assert pc.max(planned_a_host).as_py() == cap and pc.sum(pc.equal(planned_a_host, cap)).as_py() >= 8


@pytest.mark.parametrize("parts", [1, 3, 8])
def test_the_typical_rate_over_shards_is_the_one_process_median(parts):
    rng = np.random.default_rng(parts)
    for n in (0, 1, 2, 5, 1000, 4001):
        rates = np.concatenate([rng.lognormal(-3, 2, n), np.zeros(n // 4)])  # ties at 0 too
        split = np.array_split(rng.permutation(rates), parts)
        assert typical_rate_of_parts(lambda i: split[i], parts) == typical_rate(list(split)), n
