"""The day per shard equals the day in one process, row for row: two days of a demo web of 24
hosts in 4 shards, each day's frontier built shard by shard (frontiers_of_shards: each shard
from its own hosts' URLs, the first day's cut crawl-wide) and the close's recrawl priorities
shard by shard (priorities_of_parts over each shard's own inputs: one price for the crawl from
the shards' spends, one plan from their offers), compared with the same steps over the whole
crawl at once. The budgets are tight (the day's budget, the first day's, each host's cap),
so the crawl-wide cuts decide what is in and what is not. The second day's batches load the
seen filter of their own shard's hosts only."""

import dataclasses

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from crawl_assets.crawler.url_policy.sharding import shard_key, shard_of
from crawl_assets.crawler.url_policy.urls import host_of
from crawl_assets.pipeline.change_stats.change_evidence import trusted_change_evidence
from crawl_assets.pipeline.change_stats.change_stats_step import change_stats
from crawl_assets.crawler.url_policy.url_bloom import ShardSeenFilter
from crawl_assets.pipeline.crawl_history import history_before, history_through
from crawl_assets.pipeline.fetch_step import fetch_inputs, run_fetch_step
from crawl_assets.pipeline.frontier_step import build_frontier, frontiers_of_shards
from crawl_assets.pipeline.frontier_shard_inputs import split_by_shard
from crawl_assets.pipeline.priorities.priorities_step import (
    plain_strings, prepare_part, priorities_of_parts, recrawl_priorities,
)
from crawl_assets.pipeline.priorities.shard_priorities import (
    part_tables, plan_json, plan_of_shards, planned_rows, read_plan, shard_priorities, write_part,
)
from crawl_assets.pipeline.priorities.recrawl_plan import next_day, plan_path
from crawl_assets.pipeline.recrawl_inputs import change_stats_sources, priorities_inputs
from crawl_assets.pipeline.registry_step import (
    build_registry,
    build_seen_filter,
    build_shard_seen_filters,
    load_registry_urls,
)
from crawl_assets.pipeline.seen_filter_files import read_seen_filter, write_seen_filter, write_shard_seen_filters
from crawl_assets.storage.layout import (
    change_evidence_file,
    dropped_file,
    fetch_log_file,
    frontier_file,
    links_file,
    priorities_file,
    priority_part_dir,
    seeds_file,
    seen_filter_file,
    url_registry_file,
    warc_dir,
    write_parquet_atomic,
)
from demoweb import DemoWeb, DemoWebThread
from support import write_test_settings

DAYS = ["2026-11-28", "2026-11-29"]
HOSTS, SHARDS = 24, 4


@pytest.fixture(scope="module")
def web():
    with DemoWebThread(DemoWeb(seed=5, hosts=HOSTS, pages_per_host=6, validators="honest"), port=0) as server:
        yield server.web


def by_url(table: pa.Table) -> pa.Table:
    return table.take(pc.sort_indices(table["url"]))


def same_frontier(settings, date: str, plan=None):
    """The day's frontier in one process and shard by shard: the same rows, each shard's
    its own hosts', whether each shard reads the crawl's inputs or its own hosts' rows of them
    (frontier_shard_inputs). Returns the one-process frontier."""
    history = history_before(settings.data_root, date)
    whole = build_frontier(settings, history, plan)
    shards = frontiers_of_shards(settings, history, plan, settings.shard_keys())
    split = split_by_shard(settings, history, plan, settings.data_root / f"by_shard-{date}")
    for shard in settings.shard_keys():  # each shard's inputs: its own hosts' rows, all of them
        own = split.histories[shard]
        assert own_hosts(own.links, "target_host", shard) and own_hosts(own.fetch_logs, "host", shard)
        assert own_hosts([own.seeds], "host", shard)
        if plan is not None:
            assert own_hosts(split.plans[shard], "host", shard)
    assert sum(rows([split.histories[shard].seeds]) for shard in split.histories) == rows([history.seeds])
    for files in ("links", "fetch_logs"):
        assert sum(rows(getattr(split.histories[shard], files)) for shard in split.histories) == \
            rows(getattr(history, files))
    if plan is not None:
        assert sum(rows(split.plans[shard]) for shard in split.plans) == rows(plan) > 0
    for part, own in zip(shards, frontiers_of_shards(settings, split.histories, split.plans, settings.shard_keys())):
        assert own.table.equals(part.table) and own.counts == part.counts
    if plan is not None:  # a plan made per shard: each shard reads its own file as it is
        table = pa.parquet.read_table(plan)
        shard_of_row = pa.array([shard_key(shard_of(h, SHARDS)) for h in table["host"].to_pylist()])
        per_shard = []
        for shard in settings.shard_keys():
            per_shard.append(settings.data_root / f"plan_per_shard-{date}" / f"shard={shard}" / "url_priorities.parquet")
            write_parquet_atomic(table.filter(pc.equal(shard_of_row, shard)), per_shard[-1])
        split = split_by_shard(settings, history, per_shard, settings.data_root / f"by_shard-{date}")
        assert split.plans == {shard: [path] for shard, path in zip(settings.shard_keys(), per_shard)}
        for part, own in zip(shards, frontiers_of_shards(settings, split.histories, split.plans,
                                                         settings.shard_keys())):
            assert own.table.equals(part.table) and own.counts == part.counts
    # (the one-process table is ordered by shard, so the shards' tables follow one another)
    assert pa.concat_tables([part.table for part in shards]).equals(whole.table)
    left_out = {}
    for part in shards:
        for reason, urls in part.counts.left_out_by_reason.items():
            left_out[reason] = left_out.get(reason, 0) + urls
    assert left_out == dict(whole.counts.left_out_by_reason)
    return whole


def rows(files) -> int:
    return duckdb.connect().execute("SELECT count(*) FROM read_parquet($f)",
                                    {"f": [str(p) for p in files]}).fetchall()[0][0] if files else 0


def own_hosts(files, column: str, shard: str) -> bool:
    """Every row of `files` is on a host of `shard`."""
    if not files:
        return True
    hosts = duckdb.connect().execute(f"SELECT DISTINCT {column} FROM read_parquet($f)",
                                     {"f": [str(p) for p in files]}).fetchall()
    return {shard_key(shard_of(h, SHARDS)) for (h,) in hosts} <= {shard}


def same_priorities(settings, date: str):
    """The close's priorities in one process and shard by shard: every URL's row the same.
    Returns the one-process plan, written where the asset writes it."""
    root = settings.data_root
    whole_inputs = priorities_inputs(root, date, settings)
    whole = recrawl_priorities(whole_inputs.change_stats, None, whole_inputs.hosts, whole_inputs.known_urls,
                               next_day(date), settings, urls_out=priorities_file(root, date))
    shard_inputs = [priorities_inputs(root, date, settings, shard) for shard in settings.shard_keys()]
    for shard, inputs in zip(settings.shard_keys(), shard_inputs):  # each shard reads its own hosts only
        assert {shard_of(h, SHARDS) for h in inputs.known_urls["host"].to_pylist()} <= {int(shard[1:])}
    crawl = priorities_of_parts([inputs.part() for inputs in shard_inputs], next_day(date), settings)
    table = pa.parquet.read_table(priorities_file(root, date))
    merged = by_url(pa.concat_tables([part.urls for part in crawl.parts]))
    assert merged.column_names == table.column_names
    for name in table.column_names:
        assert merged[name].combine_chunks().equals(table[name].combine_chunks()), name
    assert dataclasses.replace(crawl.counts, expected_freshness=0) == \
        dataclasses.replace(whole.counts, expected_freshness=0)
    assert crawl.counts.expected_freshness == pytest.approx(whole.counts.expected_freshness, rel=1e-12)
    hosts = pa.concat_tables([part.hosts for part in crawl.parts])
    assert by_host(hosts) == by_host(whole.hosts)
    same_priorities_in_stages(settings, date, shard_inputs, table, crawl)
    return table


def same_priorities_in_stages(settings, date: str, shard_inputs, table: pa.Table, in_parts) -> None:
    """The same per shard in three stages, each as its own process would run it (the files
    between them written and read back): each shard's summary, the crawl's price and plan
    from the summaries, each shard's table at that price; the crawl's counts are those of the
    shards held in one process (in_parts), to the last bit."""
    root, folders = settings.data_root, {}
    for shard, inputs in zip(settings.shard_keys(), shard_inputs):
        folders[shard] = priority_part_dir(root, date, shard)
        write_part(part_tables(prepare_part(inputs.part(), settings), inputs.hosts), folders[shard])
    crawl = plan_of_shards(folders, next_day(date), settings)
    assert crawl.counts == in_parts.counts
    figures, rows = plan_json(crawl), planned_rows(crawl)
    parts = [shard_priorities(folders[shard], read_plan(figures, rows, shard), shard, next_day(date), settings)
             for shard in settings.shard_keys()]
    merged = by_url(pa.concat_tables([plain_strings(part.urls) for part in parts]))
    assert merged.equals(table)
    assert by_host(pa.concat_tables([part.hosts for part in parts])) == by_host(pa.concat_tables(
        [part.hosts for part in in_parts.parts]))


def by_host(hosts: pa.Table) -> dict:
    return {row["host"]: (row["cap"], row["planned"]) for row in hosts.to_pylist()}


def fetch_day(settings, date: str, frontier) -> dict:
    """Every shard's batch, and the close's seen filters and change statistics; returns the
    seen filter each batch loaded."""
    root = settings.data_root
    loaded = {}
    for shard, rows in frontier.shard_tables():
        write_parquet_atomic(rows, frontier_file(root, date, shard))
        inputs = fetch_inputs(root, date, shard, settings)
        loaded[shard] = inputs.seen
        result = run_fetch_step(settings, shard, inputs, warc_dir(root, date, shard), f"recrawl-{date}-{shard}")
        write_parquet_atomic(result.fetch_log, fetch_log_file(root, date, shard))
        write_parquet_atomic(result.links, links_file(root, date, shard))
        write_parquet_atomic(result.dropped, dropped_file(root, date, shard))
        write_parquet_atomic(result.change_evidence, change_evidence_file(root, date, shard))
    write_parquet_atomic(build_registry(date, history_through(root, date)).table, url_registry_file(root, date))
    urls = load_registry_urls(root, date)  # the seen filters, as seen_url_filter writes them
    write_seen_filter(build_seen_filter(urls), seen_filter_file(root, date))
    write_shard_seen_filters(root, date, build_shard_seen_filters(urls, SHARDS), SHARDS)
    sources = change_stats_sources(root, date)
    change_stats([str(p) for p in sources.fetch_logs], date, settings,
                 lastmod_evidence=trusted_change_evidence(root, date), previous=sources.previous, state_root=root)
    return loaded


def check_shard_seen_filters(settings, date: str, loaded: dict) -> None:
    """Each batch of `date` loaded its shard's filter of the day before, which holds every URL
    of its hosts the crawl knew; its links to its own hosts are new exactly when the whole
    crawl's filter does not know them (or known: found already in the batch), to other
    shards' hosts neither (None)."""
    root, before = settings.data_root, DAYS[DAYS.index(date) - 1]
    whole = read_seen_filter(seen_filter_file(root, before))
    known = load_registry_urls(root, before)["url"].to_pylist()
    for shard, seen in loaded.items():
        assert isinstance(seen, ShardSeenFilter) and seen.shard_count == SHARDS
        assert all(url in seen.bloom for url in known if seen.holds(host_of(url)))
        links = pa.parquet.read_table(links_file(root, date, shard)).to_pylist()
        own = [link for link in links if seen.holds(link["target_host"])]
        assert own and len(own) < len(links)  # links to this shard's hosts and to others'
        assert all(link["is_new"] is None for link in links if not seen.holds(link["target_host"]))
        assert all(link["is_new"] is not None for link in own)
        assert all(link["target"] not in whole for link in own if link["is_new"])
        assert all(not link["is_new"] for link in own if link["target"] in whole)


def test_a_day_per_shard_plans_what_the_one_process_day_plans(tmp_path, web):
    # Tight budgets: 40 fetches a day over about 170 known URLs, at most 4 a host a day, so
    # the day's price, its plan and the hosts' caps all bind.
    settings = dataclasses.replace(write_test_settings(tmp_path, web, seed_hosts=HOSTS).load(),
                                   shard_count=SHARDS, daily_fetch_budget=40, max_pages_per_host=4)
    root = settings.data_root
    seeds = web.seed_urls()
    write_parquet_atomic(pa.table({"url": seeds, "host": [host_of(u) for u in seeds],
                                   "source": ["test"] * len(seeds)}), seeds_file(root))
    assert len({shard_of(host_of(u), SHARDS) for u in seeds}) == SHARDS  # every shard has hosts

    # The first day's cut is crawl-wide: 7 of the 24 seeds, shallowest and hosts in turn.
    small = same_frontier(dataclasses.replace(settings, first_day_fetch_budget=7), DAYS[0])
    assert small.counts.urls == 7 and len(set(small.table["shard"].to_pylist())) > 1

    first = same_frontier(settings, DAYS[0])
    fetch_day(settings, DAYS[0], first)
    plan = same_priorities(settings, DAYS[0])
    planned = plan.filter(plan["planned"])
    assert planned.num_rows == 40 < plan.num_rows  # the budget decided
    assert len({shard_of(h, SHARDS) for h in planned["host"].to_pylist()}) == SHARDS

    second = same_frontier(settings, DAYS[1], plan_path(root, DAYS[1]))
    assert set(second.table["url"].to_pylist()) == set(planned["url"].to_pylist())
    check_shard_seen_filters(settings, DAYS[1], fetch_day(settings, DAYS[1], second))
    plan = same_priorities(settings, DAYS[1])
    kinds = set(plan.filter(plan["planned"])["kind"].to_pylist())
    assert {"refresh", "discovery"} <= kinds  # the second close plans pages held and new ones
    assert {shard_key(n) for n in range(SHARDS)} == set(settings.shard_keys())
