"""The sensors that chain the priorities per shard after a day's close (sensors/priorities_chain.py),
asked of an instance holding hand-made runs: what each requests after which run, with the
run's data root passed on, and what it leaves alone."""

import pytest
from dagster import (
    DagsterEvent, DagsterEventType, DagsterInstance, DagsterRun, DagsterRunStatus, RunRequest, SkipReason,
    build_run_status_sensor_context,
)

from crawl_assets.defs.jobs import (
    CLI_DRIVER, DRIVER_TAG, crawl_price_job, day_close_job, shard_close_job,
)
from crawl_assets.defs.partitions import SHARD_KEYS
from sensors.priorities_chain import crawl_price_after_parts, shard_close_after_day_close, shard_priorities_after_price

DAY = "2026-11-20"
S = DagsterRunStatus
CONFIG = {"resources": {"crawl_settings": {"config": {"data_root": "/elsewhere"}}}}


@pytest.fixture
def instance(tmp_path):
    with DagsterInstance.ephemeral(tempdir=str(tmp_path)) as instance:
        yield instance


def add_run(instance, job, partition: str, status=S.SUCCESS, tags=None) -> DagsterRun:
    return instance.add_run(DagsterRun(job_name=job.name, status=status, run_config=CONFIG,
                                       tags={"dagster/partition": partition, **(tags or {})}))


def evaluate(sensor, instance, run: DagsterRun):
    event = DagsterEvent(event_type_value=DagsterEventType.RUN_SUCCESS.value, job_name=run.job_name)
    return sensor(build_run_status_sensor_context(sensor_name=sensor.name, dagster_event=event,
                                                  dagster_instance=instance, dagster_run=run))


def test_a_closed_day_asks_every_shard_for_its_summary_then_the_price_then_every_shards_plan(instance):
    close = add_run(instance, day_close_job, DAY)
    parts = evaluate(shard_close_after_day_close, instance, close)
    assert [(r.job_name, r.partition_key, r.tags["dagster/partition/shard"]) for r in parts] == [
        ("shard_close_job", f"{DAY}|{shard}", shard) for shard in SHARD_KEYS]
    assert all(r.run_config == CONFIG for r in parts)  # the close's data root

    # The price waits for every shard's latest summary run to have succeeded.
    runs = [add_run(instance, shard_close_job, r.partition_key) for r in parts[:-1]]
    waiting = evaluate(crawl_price_after_parts, instance, runs[-1])
    assert isinstance(waiting, SkipReason) and SHARD_KEYS[-1] in waiting.skip_message
    last = add_run(instance, shard_close_job, parts[-1].partition_key)
    add_run(instance, shard_close_job, parts[0].partition_key, S.FAILURE)  # s00 again: failed
    assert SHARD_KEYS[0] in evaluate(crawl_price_after_parts, instance, last).skip_message
    again = add_run(instance, shard_close_job, parts[0].partition_key)
    price = evaluate(crawl_price_after_parts, instance, last)
    assert isinstance(price, RunRequest) and price.partition_key == DAY and price.run_config == CONFIG
    # two shards landing in one tick ask once: the run key is the same
    assert evaluate(crawl_price_after_parts, instance, again).run_key == price.run_key

    plans = evaluate(shard_priorities_after_price, instance, add_run(instance, crawl_price_job, DAY))
    assert [(r.job_name, r.partition_key) for r in plans] == [
        ("shard_priorities_job", f"{DAY}|{shard}") for shard in SHARD_KEYS]


def test_a_driven_close_is_left_to_its_driver(instance):
    close = add_run(instance, day_close_job, DAY, tags={DRIVER_TAG: CLI_DRIVER})
    assert isinstance(evaluate(shard_close_after_day_close, instance, close), SkipReason)
    price = add_run(instance, crawl_price_job, DAY, tags={DRIVER_TAG: CLI_DRIVER})
    assert isinstance(evaluate(shard_priorities_after_price, instance, price), SkipReason)
