"""A backfill over two days builds the crawl two nightly cycles build.

The backfill is what "Materialize all" over a range of days launches from the UI: one asset
backfill of every asset over the two days, through the real instance (`dagster dev`, its daemon
and run queue), ordered by the daemon from the declared dependencies alone, with every day's
frontier launched early (they depend only on the seeds and the frontier before). Without day
order, frontier_snapshot[day 2] is built before day 1's links exist and holds the seeds only.

The nightly cycles run the stages the nightly schedule and `make crawl` run (frontier, one
fetch per shard, the day's close), day after day, with the deployment's settings against the
same demo web, in a process of their own while the daemon works through the backfill (how
cycles go through the instance's run queue is tests/orchestration/test_run_queue.py's). Each
crawl has a data root of its own."""

import json
import os
import subprocess
import sys
import time
import urllib.request

import pyarrow.parquet as pq
import pytest
from dagster import AssetKey, DagsterRunStatus, DailyPartitionsDefinition, MultiPartitionsDefinition, RunsFilter

from crawl_assets.crawler.settings import PROJECT_ROOT, SETTINGS_ENV
from crawl_assets.crawler.vocabulary import StatusClass
from crawl_assets.definitions import defs
from crawl_assets.defs.jobs import DRIVER_TAG
from crawl_assets.storage.layout import url_registry_file

# Two days prove the order: the second day's frontier needs the first day's links and close.
DAYS = ["2026-11-10", "2026-11-11"]
BACKFILL_TIMEOUT_S = 1800.0  # a bound, not a speed goal
FINISHED = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}

LAUNCH_BACKFILL = """
mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on Error { message }
  }
}"""


def every_asset_over(days: list[str], shards: list[str]) -> list[dict]:
    """"Materialize all" over `days`: each asset with its partitions in the range."""
    selection = []
    for key in sorted(defs.resolve_asset_graph().get_all_asset_keys(), key=AssetKey.to_user_string):
        partitions = defs.resolve_asset_graph().get(key).partitions_def
        selector = {"assetKey": {"path": key.path}}
        if isinstance(partitions, DailyPartitionsDefinition):
            selector["partitions"] = {"range": {"start": days[0], "end": days[-1]}}
        elif isinstance(partitions, MultiPartitionsDefinition):
            selector["partitions"] = {"range": {"start": f"{days[0]}|{shards[0]}", "end": f"{days[-1]}|{shards[-1]}"}}
        else:
            assert partitions is None, key
        selection.append(selector)
    return selection


def launch_backfill(url: str, selection: list[dict], run_config: dict) -> str:
    params = {"partitionsByAssets": selection, "runConfigData": run_config,
              "tags": [{"key": DRIVER_TAG, "value": "backfill"}],  # the day-chain sensors stand aside
              "title": "two days"}
    request = urllib.request.Request(f"{url}/graphql", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"query": LAUNCH_BACKFILL, "variables": {"params": params}}).encode())
    with urllib.request.urlopen(request, timeout=60) as answer:
        result = json.loads(answer.read())["data"]["launchPartitionBackfill"]
    assert result["__typename"] == "LaunchBackfillSuccess", result
    return result["backfillId"]


def wait_for_backfill(instance, backfill_id: str) -> str:
    deadline = time.monotonic() + BACKFILL_TIMEOUT_S
    while time.monotonic() < deadline:
        status = instance.get_backfill(backfill_id).status.value
        if status in FINISHED:
            return status
        time.sleep(2)
    raise AssertionError(f"backfill {backfill_id} did not finish within {BACKFILL_TIMEOUT_S} s")


# run_cycle with the settings of RECRAWL_SETTINGS but the data root given; every day of argv.
NIGHTLY_CYCLES = """import sys
from dagster import DagsterInstance
from crawl_assets.cli.cycle import run_cycle
from crawl_assets.defs.resources import CrawlSettingsResource
resource = CrawlSettingsResource(data_root=sys.argv[1])
with DagsterInstance.ephemeral() as instance:
    for day in sys.argv[2:]:
        run_cycle(day, instance, resource)
"""


def start_nightly_cycles(deployment, root) -> subprocess.Popen:
    """The nightly cycles of DAYS into `root`, in a process of their own: the deployment's settings
    (two shards) are not the ones the definitions in this process were loaded with."""
    env = os.environ | {SETTINGS_ENV: ":".join(deployment.settings_files)}
    return subprocess.Popen([sys.executable, "-c", NIGHTLY_CYCLES, str(root), *DAYS], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def crawl_of(root, days: list[str]) -> dict:
    """What a crawl built, without the moments it ran: each day's frontier (rows by shard) and
    fetched URLs with their answers, and the registry of the last day."""
    def rows(table: str, day: str, columns: list[str]) -> list[tuple]:
        files = sorted((root / table / f"date={day}").glob("shard=*/*.parquet"))
        assert files, (table, day)
        found = []
        for path in files:
            shard = path.parent.name
            found += [(shard, *row.values()) for row in pq.read_table(path, columns=columns).to_pylist()]
        return sorted(found)

    registry = pq.read_table(url_registry_file(root, days[-1]), columns=["url", "first_seen", "depth",
                                                                         "discovered_from"]).to_pylist()
    return {
        "frontier": {day: rows("frontier", day, ["url", "depth", "priority", "etag", "last_modified",
                                                 "last_payload_digest"]) for day in days},
        "fetched": {day: rows("fetch_log", day, ["url", "status", "status_class", "warc_type"]) for day in days},
        "registry": sorted(tuple(row.values()) for row in registry),
    }


@pytest.mark.timeout(BACKFILL_TIMEOUT_S + 600)  # the suite's 300 s are less than two days twice
def test_a_two_day_backfill_builds_what_two_nightly_cycles_build(deployment, tmp_path):
    settings, url, instance = deployment.settings, deployment.service.url, deployment.instance
    shards = settings.shard_keys()
    nightly_root, backfill_root = tmp_path / "nightly", tmp_path / "backfill"

    backfill_id = launch_backfill(url, every_asset_over(DAYS, shards), deployment.run_config(backfill_root))
    cycles = start_nightly_cycles(deployment, nightly_root)
    try:
        status = wait_for_backfill(instance, backfill_id)
        output, _ = cycles.communicate(timeout=BACKFILL_TIMEOUT_S)
    finally:
        cycles.kill()
    assert cycles.returncode == 0, output[-3000:]
    runs = instance.get_run_records(RunsFilter(tags={"dagster/backfill": backfill_id}))
    failed = [r.dagster_run.run_id for r in runs if r.dagster_run.status != DagsterRunStatus.SUCCESS]
    assert status in ("COMPLETED", "COMPLETED_SUCCESS") and not failed, (status, failed)
    # The daemon launched its own runs (implicit asset job), each fetch run tagged with its shard.
    fetch_runs = [r.dagster_run for r in runs if "dagster/partition/shard" in r.dagster_run.tags]
    assert sorted(r.tags["dagster/partition"] for r in fetch_runs) == sorted(f"{d}|{s}" for d in DAYS for s in shards)

    nightly, backfill = crawl_of(nightly_root, DAYS), crawl_of(backfill_root, DAYS)
    # Each day built on the one before (so the comparison below compares something): day 2's
    # frontier holds day 1's links, and day 2 asked with day 1's validators ...
    assert len(nightly["frontier"][DAYS[1]]) > len(nightly["frontier"][DAYS[0]])
    assert StatusClass.NOT_MODIFIED in {row[3] for row in nightly["fetched"][DAYS[1]]}
    # ... and the backfill built the same, day by day.
    for day in DAYS:
        assert backfill["frontier"][day] == nightly["frontier"][day], day
        assert backfill["fetched"][day] == nightly["fetched"][day], day
    assert backfill["registry"] == nightly["registry"]
