"""A day per shard through Dagster (settings.day_per_shard, materialised as the cycle command's
run_cycle materialises a day): each shard's frontier built in its fetch run (shard_frontier[D|S],
after frontier_snapshot[D] found the first day's cut), and the close per shard: each shard's
seen filter and summary (shard_seen_filter, priority_part[D|S]), the crawl's price
(crawl_price[D]), each shard's priorities (shard_priorities[D|S]). On each of two days of a demo
web of 24 hosts in 4 shards (the definitions' own), the plan equals, row for row, what the
one-process step (recrawl_priorities) plans from the same crawl, each shard's seen filter is the
one the one-process close writes, and each day's frontier is the one the one-process frontier
step builds from the same history and plan, each shard's built from its own part of the
inputs the day's start split by shard (rebuilt with every other part and the crawl's own inputs
gone, it is the same). The budgets are tight (12 fetches on the first day,
then 40 a day over about 170 known URLs, 4 a host), so the first day's cut, the price, the
plan's cut and the hosts' caps all decide."""

import dataclasses
import json
import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from crawl_assets.crawler.settings import PROJECT_ROOT, SETTINGS_ENV, load_settings, with_run_overrides
from crawl_assets.crawler.url_policy.sharding import shard_of
from crawl_assets.pipeline.crawl_history import history_before
from crawl_assets.pipeline.frontier_step import build_frontier
from crawl_assets.pipeline.priorities.priorities_step import recrawl_priorities
from crawl_assets.pipeline.priorities.recrawl_plan import next_day, priorities_files
from crawl_assets.pipeline.recrawl_inputs import host_budgets, priorities_inputs
from crawl_assets.pipeline.registry_step import build_shard_seen_filters, load_registry_urls
from crawl_assets.pipeline.seen_filter_files import shard_seen_filter_file, write_shard_seen_filters
from crawl_assets.storage.layout import (
    crawl_price_file, day_start_file, frontier_file, frontier_inputs_dir, priorities_file, shard_priorities_file,
    shard_priority_hosts_file,
)
from support import DemoWebProcess, write_test_settings

DAYS = ["2026-11-28", "2026-11-29"]
HOSTS = 24

# The days through Dagster in a process whose definitions load with day_per_shard = true
# (RECRAWL_SETTINGS): run_cycle's stages, with the data root and seeds of argv.
CYCLES = """import sys
from dagster import DagsterInstance
from crawl_assets.cli.cycle import run_cycle
from crawl_assets.defs.resources import CrawlSettingsResource
resource = CrawlSettingsResource(data_root=sys.argv[1], seeds_dir=sys.argv[2])
with DagsterInstance.ephemeral() as instance:
    for day in sys.argv[3:]:
        run_cycle(day, instance, resource)
"""


# One shard's frontier materialised again through Dagster, for each fetch partition key of argv:
# "KEY ok", or "KEY failed: SENTENCES".
SHARD_FRONTIERS = """import sys
from dagster import AssetSelection, DagsterInstance, materialize
from crawl_assets.cli.cycle import error_sentence
from crawl_assets.defs.assets import ALL_ASSETS
from crawl_assets.defs.resources import CrawlSettingsResource
resource = CrawlSettingsResource(data_root=sys.argv[1], seeds_dir=sys.argv[2])
with DagsterInstance.ephemeral() as instance:
    for key in sys.argv[3:]:
        result = materialize(ALL_ASSETS, selection=AssetSelection.assets("shard_frontier"), partition_key=key,
                             instance=instance, resources={"crawl_settings": resource}, raise_on_error=False)
        errors = [error_sentence(e.step_failure_data.error) for e in result.get_step_failure_events()]
        print(key, "ok" if result.success else "failed: " + "; ".join(errors))
"""


def by_url(table: pa.Table) -> pa.Table:
    return table.take(pc.sort_indices(table["url"]))


def one_process_plan(settings, day: str, out):
    """recrawl_priorities over the whole crawl in one step, its URL table written to `out`."""
    inputs = priorities_inputs(settings.data_root, day, settings)
    plan = recrawl_priorities(inputs.change_stats, None, inputs.hosts, inputs.known_urls, next_day(day), settings,
                              urls_out=out)
    return plan, host_budgets(inputs.hosts, plan.hosts)


def test_a_day_per_shard_through_dagster_builds_and_plans_what_the_one_process_day_does(tmp_path):
    with DemoWebProcess(hosts=HOSTS, pages_per_host=6) as web:
        demo = write_test_settings(tmp_path, web.web)
        tight = tmp_path / "per_shard.toml"
        tight.write_text("[crawl]\nday_per_shard = true\nshard_count = 4\ndaily_fetch_budget = 40\n"
                         "first_day_fetch_budget = 12\nmax_pages_per_host = 4\n")
        settings_files = [*demo.settings_files, str(tight)]
        days = subprocess.run([sys.executable, "-c", CYCLES, demo.data_root, demo.seeds_dir, *DAYS], cwd=PROJECT_ROOT,
                              env=os.environ | {SETTINGS_ENV: ":".join(settings_files)}, capture_output=True, text=True)
        assert days.returncode == 0, days.stderr[-3000:]
    settings = with_run_overrides(load_settings(*settings_files), demo.data_root, demo.seeds_dir)
    root, shards = settings.data_root, settings.shard_keys()
    assert settings.day_per_shard and len(shards) == 4

    whole_plans = {}
    for day in DAYS:
        files = priorities_files(root, day)
        assert files == [shard_priorities_file(root, day, shard) for shard in shards]
        assert not priorities_file(root, day).exists()  # recrawl_priorities did not run
        per_shard = by_url(pa.concat_tables([pq.read_table(f) for f in files]))
        whole_plans[day] = tmp_path / "one_process" / day / "url_priorities.parquet"
        whole, whole_hosts = one_process_plan(settings, day, whole_plans[day])
        one = pq.read_table(whole_plans[day])
        assert per_shard.schema == one.schema
        for name in one.column_names:
            assert per_shard[name].to_pylist() == one[name].to_pylist(), (day, name)
        for shard, path in zip(shards, files):  # each shard's file holds its own hosts' URLs
            assert {shard_of(h, len(shards)) for h in pq.read_table(path)["host"].to_pylist()} <= \
                {shards.index(shard)}
        hosts = pa.concat_tables([pq.read_table(shard_priority_hosts_file(root, day, shard)) for shard in shards])
        assert hosts.sort_by("host").to_pylist() == whole_hosts.to_pylist()
        counts = json.loads(crawl_price_file(root, day).read_bytes())["counts"]
        assert counts.pop("expected_freshness") == pytest.approx(whole.counts.expected_freshness, rel=1e-12)
        assert counts == {k: v for k, v in dataclasses.asdict(whole.counts).items() if k != "expected_freshness"}
        planned = per_shard.filter(per_shard["planned"])
        assert planned.num_rows == 40 < per_shard.num_rows  # the budget decided
        assert len({shard_of(h, len(shards)) for h in planned["host"].to_pylist()}) == 4  # every shard's hosts

    # Each shard's seen filter, built in its own step, is the one the one-process close writes.
    for day in DAYS:
        urls = load_registry_urls(root, day)
        write_shard_seen_filters(tmp_path / "one", day, build_shard_seen_filters(urls, len(shards)), len(shards))
        for shard in shards:
            built = shard_seen_filter_file(root, day, shard, len(shards)).read_bytes()
            assert built == shard_seen_filter_file(tmp_path / "one", day, shard, len(shards)).read_bytes()

    # Each day's frontier (the Dagster day's, shard by shard) is the one the one-process step
    # builds: the first day's cut crawl-wide, the second day's from the one-process plan.
    for day, plan, urls in ((DAYS[0], None, 12), (DAYS[1], [whole_plans[DAYS[0]]], 40)):
        frontier = build_frontier(settings, history_before(root, day), plan)
        assert frontier.counts.urls == urls and len([n for n in frontier.counts.urls_per_shard.values() if n]) == 4
        for shard, rows in frontier.shard_tables():
            assert pq.read_table(frontier_file(root, day, shard)).equals(rows), (day, shard)
    kinds = set(planned["kind"].to_pylist())
    assert {"refresh", "discovery"} <= kinds  # the second close plans pages held and new ones

    # The day's start split the frontier's inputs by shard once (the day before's split went
    # when the day after started); each shard's files hold its own hosts' rows, and its plan is
    # its own file of the plan made per shard.
    split = json.loads(day_start_file(root, DAYS[1]).read_bytes())["split"]
    assert not frontier_inputs_dir(root, DAYS[0]).exists()
    assert [p.name for p in frontier_inputs_dir(root, DAYS[1]).iterdir()] == [split["folder"].rsplit("/")[-1]]
    for shard, own in split["shards"].items():
        assert own["links"] and own["fetch_logs"]
        seeds = sorted((root / own["seeds"]).parent.glob("*.parquet"))  # (named by a glob)
        for files, column in (([root / f for f in own["links"]], "target_host"),
                              ([root / f for f in own["fetch_logs"]], "host"), (seeds, "host")):
            hosts = pa.concat_tables([pq.read_table(f, columns=[column]) for f in files])[column].to_pylist()
            assert {shard_of(h, len(shards)) for h in hosts} == {shards.index(shard)}
        assert [root / p for p in own["plan"]] == [shard_priorities_file(root, DAYS[0], shard)]
    # A shard's frontier materialised again with every other shard's part of the split, and the
    # crawl's own seeds, links and fetch logs, gone is the same: it reads its own part only. The
    # day before's, whose split is gone, is kept as its batch fetched it (its fetch began).
    built, fetched = pq.read_table(frontier_file(root, DAYS[1], "s01")), frontier_file(root, DAYS[0], "s00").read_bytes()
    for part in (root / split["folder"]).iterdir():
        for other in set(shards) - {"s01"}:
            shutil.rmtree(part / f"shard={other}", ignore_errors=True)
    for table in ("seeds_table", "links", "fetch_log"):
        (root / table).rename(tmp_path / f"aside-{table}")
    frontier_file(root, DAYS[1], "s01").unlink()
    keys = [f"{DAYS[1]}|s01", f"{DAYS[0]}|s00"]
    again = subprocess.run([sys.executable, "-c", SHARD_FRONTIERS, demo.data_root, demo.seeds_dir, *keys],
                           cwd=PROJECT_ROOT, env=os.environ | {SETTINGS_ENV: ":".join(settings_files)},
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert [f"{key} ok" for key in keys] == [line for line in again.stdout.splitlines() if "|" in line]
    assert frontier_file(root, DAYS[0], "s00").read_bytes() == fetched
    assert pq.read_table(frontier_file(root, DAYS[1], "s01")).equals(built) and built.num_rows > 0
