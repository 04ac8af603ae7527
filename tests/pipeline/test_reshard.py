"""A crawl continues across a change of shard_count without losing a URL: day one crawls the
demo web in 8 shards, day two's frontier (built from everything known) is split into 9, and
day two's batches fetch every known URL once, each host in the shard the new table names.
A new shard count takes effect in a new deployment (the fetch partitions load from the
settings), so this is the pipeline's own steps, run the way the assets run them."""

import dataclasses

import pyarrow as pa
import pytest

from crawl_assets.crawler.batches.batch import in_scope
from crawl_assets.crawler.url_policy.sharding import shard_key, shard_of
from crawl_assets.crawler.url_policy.urls import host_of
from crawl_assets.pipeline.crawl_history import history_before
from crawl_assets.pipeline.fetch_step import fetch_inputs, run_fetch_step
from crawl_assets.pipeline.frontier_step import build_frontier
from crawl_assets.storage.layout import (
    fetch_log_file,
    frontier_file,
    links_file,
    seeds_file,
    warc_dir,
    write_parquet_atomic,
)
from demoweb import DemoWeb, DemoWebThread
from support import write_test_settings

DAY_ONE, DAY_TWO = "2026-11-28", "2026-11-29"
HOSTS = 24


def crawl_day(settings, date):
    """The frontier, then every shard's batch, written where the assets write them."""
    root = settings.data_root
    frontier = build_frontier(settings, history_before(root, date))
    for shard, rows in frontier.shard_tables():
        write_parquet_atomic(rows, frontier_file(root, date, shard))
    for shard in settings.shard_keys():
        result = run_fetch_step(settings, shard, fetch_inputs(root, date, shard, settings),
                                warc_dir(root, date, shard), f"recrawl-{date}-{shard}")
        write_parquet_atomic(result.fetch_log, fetch_log_file(root, date, shard))
        write_parquet_atomic(result.links, links_file(root, date, shard))
    return frontier


def read_day(root, table, date, shards):
    return {shard: pa.parquet.read_table(table(root, date, shard)).to_pylist() for shard in shards}


@pytest.fixture(scope="module")
def web():
    with DemoWebThread(DemoWeb(seed=5, hosts=HOSTS, pages_per_host=6, validators="honest"), port=0) as server:
        yield server.web


def test_going_from_8_to_9_shards_loses_no_url_and_moves_whole_hosts(tmp_path, web):
    base = write_test_settings(tmp_path, web, seed_hosts=HOSTS).load()
    eight, nine = (dataclasses.replace(base, shard_count=n) for n in (8, 9))
    root = base.data_root
    seeds = web.seed_urls()
    write_parquet_atomic(pa.table({"url": seeds, "host": [host_of(u) for u in seeds],
                                   "source": ["test"] * len(seeds)}), seeds_file(root))

    crawl_day(eight, DAY_ONE)
    fetched_one = read_day(root, fetch_log_file, DAY_ONE, eight.shard_keys())
    links_one = read_day(root, links_file, DAY_ONE, eight.shard_keys())
    known = set(seeds) | {link["target"] for rows in links_one.values() for link in rows
                          if link["dropped_reason"] is None and in_scope(link["target_host"], base)}
    assert len(known) > 5 * HOSTS  # day one found the sites, not only their seeds

    frontier = crawl_day(nine, DAY_TWO)
    rows = frontier.table.to_pylist()
    assert {r["url"] for r in rows} == known  # every URL known after day one, nothing else
    assert all(r["shard"] == shard_key(shard_of(r["host"], 9)) for r in rows)

    # The hosts that moved all went to the new shard, and their URLs kept yesterday's
    # validators although yesterday's fetch log lies under another shard's folder.
    moved = {h for h in web.hostnames() if shard_of(h, 8) != shard_of(h, 9)}
    assert moved and {shard_of(h, 9) for h in moved} == {8}
    assert len(moved) < len(web.hostnames()) / 4
    validated_one = {r["url"] for rows_ in fetched_one.values() for r in rows_ if r["etag"]}
    carried = [r for r in rows if r["host"] in moved and r["url"] in validated_one]
    assert carried and all(r["etag"] for r in carried)

    # Day two fetched every frontier URL, each host in exactly one shard: its new one.
    fetched_two = read_day(root, fetch_log_file, DAY_TWO, nine.shard_keys())
    assert {r["url"] for rows_ in fetched_two.values() for r in rows_} >= known
    shards_of_host = {}
    for shard, rows_ in fetched_two.items():
        for r in rows_:
            shards_of_host.setdefault(r["host"], set()).add(shard)
    assert all(shards == {shard_key(shard_of(h, 9))} for h, shards in shards_of_host.items())
    assert {h for h, s in shards_of_host.items() if s == {"s08"}} == moved
