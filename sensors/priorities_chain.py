"""A day per shard's close (settings.day_per_shard: the seen filters and the priorities per
shard), chained when nobody drives the day: after day_close_job[D] succeeded,
shard_close_job[D|S] for every shard; once every
shard's latest one succeeded, crawl_price_job[D]; after it, shard_priorities_job[D|S] for every
shard. Runs tagged by a driver (the cycle command submits these stages itself) or a backfill
are left alone; a run's data root (its crawl_settings config) is passed on, as day_chain.py does.
Loaded only with day_per_shard (sensors/__init__.py): without it day_close_job does it all."""

from __future__ import annotations

from dagster import (
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    RunStatusSensorContext,
    SkipReason,
    run_status_sensor,
)

from crawl_assets.defs.jobs import (
    DRIVER_TAG, crawl_price_job, day_close_job, shard_close_job, shard_priorities_job,
)
from crawl_assets.defs.partitions import SHARD_KEYS, fetch_partition_key, fetch_partitions, partition_tags

from .day_chain import BACKFILL_TAG, settings_config
from .pace import DAY_CHAIN_INTERVAL_S

PARTITION_TAG = "dagster/partition"


def _driven(run: DagsterRun) -> str | None:
    if {DRIVER_TAG, BACKFILL_TAG} & set(run.tags):
        return f"run {run.run_id[:8]} was launched by a driver or a backfill, which launches the next stage itself"
    return None


def every_shard(job_name: str, date: str, after: DagsterRun) -> list[RunRequest]:
    """job_name[date|S] for every shard, with `after`'s settings config."""
    keys = [str(fetch_partition_key(date, shard)) for shard in SHARD_KEYS]
    return [RunRequest(run_key=f"{job_name}-{key}-after-{after.run_id}", job_name=job_name, partition_key=key,
                       tags=partition_tags(fetch_partitions, key), run_config=settings_config(after.run_config))
            for key in keys]


@run_status_sensor(run_status=DagsterRunStatus.SUCCESS, monitored_jobs=[day_close_job],
                   request_job=shard_close_job, default_status=DefaultSensorStatus.RUNNING,
                   minimum_interval_seconds=DAY_CHAIN_INTERVAL_S, name="shard_close_after_day_close")
def shard_close_after_day_close(context: RunStatusSensorContext):
    """day_close_job[D] succeeded: every shard's summary for the day's price."""
    run = context.dagster_run
    if why := _driven(run):
        return SkipReason(why)
    return every_shard(shard_close_job.name, run.tags[PARTITION_TAG], run)


def latest_runs(instance: DagsterInstance, job_name: str, date: str) -> list[DagsterRun | None]:
    """The newest run of job_name[date|S] for every shard (None: none yet)."""
    runs = []
    for shard in SHARD_KEYS:
        records = instance.get_run_records(
            RunsFilter(job_name=job_name, tags={PARTITION_TAG: str(fetch_partition_key(date, shard))}), limit=1)
        runs.append(records[0].dagster_run if records else None)
    return runs


@run_status_sensor(run_status=DagsterRunStatus.SUCCESS, monitored_jobs=[shard_close_job],
                   request_job=crawl_price_job, default_status=DefaultSensorStatus.RUNNING,
                   minimum_interval_seconds=DAY_CHAIN_INTERVAL_S, name="crawl_price_after_parts")
def crawl_price_after_parts(context: RunStatusSensorContext):
    """A shard's summary landed: the crawl's price once every shard's latest summary has."""
    run = context.dagster_run
    if why := _driven(run):
        return SkipReason(why)
    date = run.tags[PARTITION_TAG].split("|")[0]
    runs = latest_runs(context.instance, shard_close_job.name, date)
    waiting = [shard for shard, r in zip(SHARD_KEYS, runs) if r is None or r.status != DagsterRunStatus.SUCCESS]
    if waiting:
        return SkipReason(f"the price of {date} waits for the summaries of {', '.join(waiting)}")
    return RunRequest(run_key=f"price-{date}-after-{'-'.join(r.run_id[:8] for r in runs)}", partition_key=date,
                      run_config=settings_config(run.run_config))


@run_status_sensor(run_status=DagsterRunStatus.SUCCESS, monitored_jobs=[crawl_price_job],
                   request_job=shard_priorities_job, default_status=DefaultSensorStatus.RUNNING,
                   minimum_interval_seconds=DAY_CHAIN_INTERVAL_S, name="shard_priorities_after_price")
def shard_priorities_after_price(context: RunStatusSensorContext):
    """crawl_price_job[D] succeeded: every shard's priorities at the price."""
    run = context.dagster_run
    if why := _driven(run):
        return SkipReason(why)
    return every_shard(shard_priorities_job.name, run.tags[PARTITION_TAG], run)


PRIORITIES_SENSORS = [shard_close_after_day_close, crawl_price_after_parts, shard_priorities_after_price]
