"""Which of a day's fetch runs count (defs/run_status.py): the latest run of each shard's
partition, asked of an instance holding hand-made runs; and the sentence of a day where no
shard landed."""

import pytest
from dagster import AssetKey, DagsterInstance, DagsterRun, DagsterRunStatus

from crawl_assets.defs.jobs import fetch_job, shard_close_job, shard_priorities_job
from crawl_assets.defs.run_status import (failed_fetch_runs, landed_shards, latest_fetch_run, no_shard_landed,
                                          retry_command)

DAY = "2026-11-20"
S = DagsterRunStatus


@pytest.fixture
def instance(tmp_path):
    return DagsterInstance.ephemeral(tempdir=str(tmp_path))


def fetch_run(instance, shard: str, status: DagsterRunStatus, date: str = DAY) -> DagsterRun:
    """A run of fetch partition date|shard, newer than every run added before it."""
    return instance.add_run(DagsterRun(job_name=fetch_job.name, status=status,
                                       tags={"dagster/partition": f"{date}|{shard}"}))


def test_the_latest_run_of_a_shards_partition_is_its_state(instance):
    assert latest_fetch_run(instance, DAY, "s00") is None
    fetch_run(instance, "s00", S.SUCCESS)
    failed_again = fetch_run(instance, "s00", S.FAILURE)  # landed, then fetched again: failed
    fetch_run(instance, "s01", S.FAILURE)
    retried = fetch_run(instance, "s01", S.SUCCESS)  # failed, then retried: landed
    fetch_run(instance, "s02", S.SUCCESS, date="2026-11-21")  # the next day's
    fetch_run(instance, "s02", S.FAILURE, date="2026-11-19")  # the day before's
    for job in (shard_close_job, shard_priorities_job):  # runs keyed like fetches, but not fetches
        instance.add_run(DagsterRun(job_name=job.name, status=S.FAILURE, tags={"dagster/partition": f"{DAY}|s01"}))
    instance.add_run(DagsterRun(job_name="__ASSET_JOB", status=S.FAILURE, tags={"dagster/partition": f"{DAY}|s01"},
                                asset_selection=frozenset({AssetKey("priority_part")})))  # (from the asset graph)
    assert latest_fetch_run(instance, DAY, "s00").run_id == failed_again.run_id
    assert latest_fetch_run(instance, DAY, "s01").run_id == retried.run_id
    assert latest_fetch_run(instance, DAY, "s02") is None
    shards = ["s00", "s01", "s02"]
    assert landed_shards(instance, DAY, shards) == ["s01"]
    assert failed_fetch_runs(instance, DAY, shards) == {"s00": f"run {failed_again.run_id[:8]}: failure"}


def test_a_shard_failed_when_its_latest_run_ended_without_success(instance):
    """Failed or cancelled counts; a run still going (or waiting to retry) is no failure yet,
    and no landing either."""
    failed = fetch_run(instance, "s00", S.FAILURE)
    cancelled = fetch_run(instance, "s01", S.CANCELED)
    fetch_run(instance, "s02", S.SUCCESS)
    fetch_run(instance, "s03", S.FAILURE)
    fetch_run(instance, "s03", S.STARTED)  # its retry, under way
    fetch_run(instance, "s04", S.NOT_STARTED)
    shards = ["s00", "s01", "s02", "s03", "s04", "s05"]  # s05: no run yet
    assert failed_fetch_runs(instance, DAY, shards) == {"s00": f"run {failed.run_id[:8]}: failure",
                                                        "s01": f"run {cancelled.run_id[:8]}: canceled"}
    assert landed_shards(instance, DAY, shards) == ["s02"]


def test_a_day_where_no_shard_landed_names_each_run_and_the_command_that_retries_them():
    failed = {"s02": "run 0badc0de: canceled", "s00": "run deadbeef: failure"}
    assert retry_command(DAY, ["s02", "s00"]) == f"python -m crawl_assets.cli.cycle --date {DAY} --shards s00,s02"
    assert no_shard_landed(DAY, failed) == (
        f"no shard of {DAY} landed, every fetch run failed: s00 (run deadbeef: failure), s02 (run 0badc0de: canceled); "
        "the day is not closed on nothing: fix what their failures say, then retry them: "
        f"python -m crawl_assets.cli.cycle --date {DAY} --shards s00,s02 "
        "(or launch their fetch_job runs again in the UI: the day closes after them)")
