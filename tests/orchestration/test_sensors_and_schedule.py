"""The nightly schedule and the sensors that chain a day, evaluated against a test instance
holding real runs of stand-in assets (same keys and partitions, no crawling)."""

import json
from datetime import datetime, timedelta, timezone

import pytest
from dagster import (
    DagsterInstance,
    DagsterRunStatus,
    Failure,
    MaterializeResult,
    asset,
    build_schedule_context,
    build_sensor_context,
    instance_for_test,
    materialize,
)

from crawl_assets.definitions import defs
from crawl_assets.defs.assets.fetch import FETCH_LOG, REFETCH_TAG
from crawl_assets.defs.assets.frontier import KEPT_METADATA
from crawl_assets.defs.resources import CrawlSettingsResource
from crawl_assets.defs.jobs import CLI_DRIVER, DRIVER_TAG, SHARD_TAG
from crawl_assets.deployment.home_locks import command_lock
from crawl_assets.defs.partitions import SHARD_KEYS, daily_partitions, fetch_partition_key, fetch_partitions
from crawl_assets.defs.schedules import NIGHTLY_HOUR, nightly_cycle
from sensors.day_chain import BACKFILL_TAG, close_day_after_fetch, fetch_after_frontier
from sensors.seed_changes import seed_files_changed

DAY = "2026-11-20"


@asset(name="frontier_snapshot", partitions_def=daily_partitions)
def stand_in_frontier() -> None:
    pass


@asset(name="frontier_snapshot", partitions_def=daily_partitions)
def stand_in_kept_frontier() -> MaterializeResult:
    return MaterializeResult(metadata={KEPT_METADATA: True})  # a re-run of a fetched day


@asset(name=FETCH_LOG, partitions_def=fetch_partitions)
def stand_in_fetch(context) -> None:
    if context.partition_key.keys_by_dimension["shard"] == "s01":
        raise Failure("this shard fails, retries included")


def land(instance: DagsterInstance, asset_def, key: str, **tags) -> bool:
    return materialize([asset_def], partition_key=key, instance=instance, tags=tags, raise_on_error=False).success


@pytest.fixture
def instance():
    with instance_for_test() as instance:
        yield instance


def test_a_landed_frontier_starts_every_shard_with_its_shard_tag(instance):
    land(instance, stand_in_frontier, DAY)
    land(instance, stand_in_frontier, "2026-11-21", **{DRIVER_TAG: "cli"})  # its driver fetches itself
    land(instance, stand_in_frontier, "2026-11-22", **{BACKFILL_TAG: "abcdefgh"})  # and so does a backfill
    context = build_sensor_context(instance=instance, definitions=defs)
    result = fetch_after_frontier(context)
    assert [r.partition_key for r in result.run_requests] == [f"{DAY}|{s}" for s in SHARD_KEYS]
    assert [r.tags[SHARD_TAG] for r in result.run_requests] == SHARD_KEYS

    again = fetch_after_frontier(build_sensor_context(instance=instance, cursor=result.cursor, definitions=defs))
    assert again.run_requests == []  # each landed frontier is acted on once


def test_a_kept_frontier_starts_no_fetch_and_a_refetched_one_refetches_every_shard(instance):
    land(instance, stand_in_kept_frontier, DAY)
    land(instance, stand_in_frontier, "2026-11-21", **{REFETCH_TAG: "true"})
    result = fetch_after_frontier(build_sensor_context(instance=instance, definitions=defs))
    assert [r.partition_key for r in result.run_requests] == [f"2026-11-21|{s}" for s in SHARD_KEYS]
    assert all(r.tags[REFETCH_TAG] == "true" for r in result.run_requests)


def test_the_day_closes_once_every_shard_finished_and_says_which_failed(instance):
    for shard in SHARD_KEYS[:-1]:
        land(instance, stand_in_fetch, str(fetch_partition_key(DAY, shard)))
    first = close_day_after_fetch(build_sensor_context(instance=instance, definitions=defs))
    assert first.run_requests == [] and json.loads(first.cursor)["open"] == [DAY]  # the last shard is missing

    assert land(instance, stand_in_fetch, str(fetch_partition_key(DAY, SHARD_KEYS[-1])))
    second = close_day_after_fetch(build_sensor_context(instance=instance, cursor=first.cursor, definitions=defs))
    (request,) = second.run_requests
    assert request.partition_key == DAY
    assert request.tags["crawl/failed_shards"] == "s01"  # the partial day is named
    failed = [r.dagster_run.tags["dagster/partition"] for r in instance.get_run_records()
              if r.dagster_run.status == DagsterRunStatus.FAILURE]
    assert failed == [f"{DAY}|s01"]
    assert close_day_after_fetch(build_sensor_context(
        instance=instance, cursor=second.cursor, definitions=defs)).run_requests == []


def test_a_day_where_no_shard_landed_stays_open_and_the_tick_names_the_runs_and_the_retry(instance):
    assert land(instance, stand_in_fetch, str(fetch_partition_key(DAY, "s00")))  # landed once, then
    job = defs.resolve_job_def("fetch_job")
    for shard in SHARD_KEYS:  # every shard's latest run failed (s00's run again, the others' first)
        key = str(fetch_partition_key(DAY, shard))
        instance.report_run_failed(instance.create_run_for_job(job, tags={"dagster/partition": key}))
    result = close_day_after_fetch(build_sensor_context(instance=instance, definitions=defs))
    assert result.run_requests == [] and json.loads(result.cursor)["open"] == [DAY]
    assert result.skip_reason.skip_message.startswith(f"no shard of {DAY} landed, every fetch run failed: s00 (run ")
    assert f"python -m crawl_assets.cli.cycle --date {DAY} --shards {','.join(SHARD_KEYS)}" in result.skip_reason.skip_message
    assert land(instance, stand_in_fetch, str(fetch_partition_key(DAY, "s00")))  # retried: the day closes
    again = close_day_after_fetch(build_sensor_context(instance=instance, cursor=result.cursor, definitions=defs))
    assert [r.partition_key for r in again.run_requests] == [DAY]


@asset(name="frontier_snapshot", partitions_def=daily_partitions)
def stand_in_frontier_over_a_root(crawl_settings: CrawlSettingsResource) -> None:
    pass


@asset(name=FETCH_LOG, partitions_def=fetch_partitions)
def stand_in_fetch_over_a_root(crawl_settings: CrawlSettingsResource) -> None:
    pass


def test_a_day_launched_over_another_data_root_is_fetched_and_closed_there(tmp_path, instance):
    """A frontier launched with its own data root (run config, as a backfill or a test passes
    it): its fetch runs and its close carry that root on. Without it they wrote in the settings'
    root, where that day's frontier was never built, and one crawl's days ran into another's."""
    config = {"resources": {"crawl_settings": {"config": {"data_root": str(tmp_path / "data")}}}}
    assert materialize([stand_in_frontier_over_a_root], partition_key=DAY, instance=instance, run_config=config,
                       resources={"crawl_settings": CrawlSettingsResource.configure_at_launch()}).success
    land(instance, stand_in_frontier, "2026-11-21")  # one on the settings' root: no config added
    requests = fetch_after_frontier(build_sensor_context(instance=instance, definitions=defs)).run_requests
    assert [(r.partition_key, r.run_config) for r in requests] == (
        [(f"{DAY}|{s}", config) for s in SHARD_KEYS] + [(f"2026-11-21|{s}", {}) for s in SHARD_KEYS])
    for request in requests[:len(SHARD_KEYS)]:  # the fetch runs, as the daemon launches them
        assert materialize([stand_in_fetch_over_a_root], partition_key=request.partition_key, instance=instance,
                           run_config=request.run_config,
                           resources={"crawl_settings": CrawlSettingsResource.configure_at_launch()}).success
    (close,) = close_day_after_fetch(build_sensor_context(instance=instance, definitions=defs)).run_requests
    assert (close.partition_key, close.run_config) == (DAY, config)


def test_changed_seed_files_start_today_frontier_once(tmp_path, monkeypatch, instance):
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "a.txt").write_text("https://example.org/\n")
    overlay = tmp_path / "seeds.toml"
    overlay.write_text(f'[crawl]\nseeds_dir = "{seeds}"\n')
    monkeypatch.setenv("RECRAWL_SETTINGS", str(overlay))

    first = seed_files_changed(build_sensor_context(definitions=defs))
    assert first.run_requests == [] and first.cursor  # the first tick only records the files
    unchanged = seed_files_changed(build_sensor_context(cursor=first.cursor, definitions=defs))
    assert not getattr(unchanged, "run_requests", None)
    (seeds / "b.txt").write_text("https://example.com/\n")
    changed = seed_files_changed(build_sensor_context(instance=instance, cursor=first.cursor, definitions=defs))
    (request,) = changed.run_requests
    assert request.partition_key == datetime.now(timezone.utc).date().isoformat()
    assert changed.cursor != first.cursor


def test_a_seed_change_waits_while_a_command_is_alive_then_starts_today(tmp_path, monkeypatch, instance):
    """A command between its runs (or between its days) queues nothing, yet drives the days: the
    change is recorded, and today's cycle starts once the command has ended."""
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "a.txt").write_text("https://example.org/\n")
    monkeypatch.setenv("RECRAWL_SETTINGS", str(tmp_path / "seeds.toml"))
    (tmp_path / "seeds.toml").write_text(f'[crawl]\nseeds_dir = "{seeds}"\n')
    first = seed_files_changed(build_sensor_context(instance=instance, definitions=defs))
    assert not first.run_requests
    (seeds / "b.txt").write_text("https://example.com/\n")
    with command_lock(instance.root_directory, "cycle of 2026-11-20"):  # alive, no run of it queued
        during = seed_files_changed(build_sensor_context(instance=instance, cursor=first.cursor, definitions=defs))
        assert not during.run_requests
        assert during.skip_reason.skip_message.startswith(
            "the seed files changed and wait: a command is driving days (cycle of 2026-11-20 (pid ")
    after = seed_files_changed(build_sensor_context(instance=instance, cursor=during.cursor, definitions=defs))
    (request,) = after.run_requests  # the recorded change, now that the command has ended
    assert request.partition_key == datetime.now(timezone.utc).date().isoformat()
    again = seed_files_changed(build_sensor_context(instance=instance, cursor=after.cursor, definitions=defs))
    assert not getattr(again, "run_requests", None)


def nightly_tick(instance, day: str):
    tick = datetime.fromisoformat(day).replace(hour=NIGHTLY_HOUR, tzinfo=timezone.utc)
    context = build_schedule_context(instance=instance, scheduled_execution_time=tick,
                                     repository_def=defs.get_repository_def())
    return nightly_cycle.evaluate_tick(context)


def test_the_nightly_schedule_runs_by_default_and_launches_that_day(instance):
    assert nightly_cycle.default_status.value == "RUNNING"
    (request,) = nightly_tick(instance, "2026-11-20").run_requests
    assert request.partition_key == "2026-11-20"  # today's cycle, not yesterday's
    with command_lock(instance.root_directory, "cycle of 2026-11-20"):
        held = nightly_tick(instance, "2026-11-20")
    assert not held.run_requests and "a command is driving days" in held.skip_message


def test_no_trigger_starts_a_day_ahead_of_days_crawled_by_hand(instance):
    """A catch-up, one command a day: between two commands nothing is alive, and the schedule
    must not start today (the next command's earlier day would be refused); it may start the
    catch-up's next day, and once a later day started otherwise, there is no catch-up."""
    frontier = defs.resolve_job_def("frontier_job")
    today = datetime.now(timezone.utc).date()
    crawled = (today - timedelta(days=20)).isoformat()  # a past day, crawled by a command today
    instance.create_run_for_job(frontier, tags={DRIVER_TAG: CLI_DRIVER, "dagster/partition": crawled})
    held = nightly_tick(instance, today.isoformat())
    assert not held.run_requests
    next_day, before = (today - timedelta(days=19)).isoformat(), (today - timedelta(days=1)).isoformat()
    assert held.skip_message.startswith(f"earlier days are being crawled by hand (the last cycle command crawled "
                                        f"{crawled}, on {today.isoformat()}): starting {today.isoformat()} now")
    assert f"python -m crawl_assets.cli.cycle --date {next_day} --until {before}" in held.skip_message
    (request,) = nightly_tick(instance, next_day).run_requests  # the catch-up's next day is no day ahead
    assert request.partition_key == next_day
    instance.create_run_for_job(frontier, tags={"dagster/partition": (today - timedelta(days=2)).isoformat()})
    (request,) = nightly_tick(instance, today.isoformat()).run_requests  # a later day started: no catch-up
