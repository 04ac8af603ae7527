"""What the instance knows about a day's fetch runs: the latest run of each shard's partition.
The day-close sensor waits on it; the day report names the shards whose run failed; a day
where no shard landed is not closed, and both the sensor and the cycle command say which runs
failed and the command that retries them (no_shard_landed)."""

from __future__ import annotations

from dagster import AssetKey, DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter

from .partitions import fetch_partition_key

# A run in one of these states will not change again (what DagsterRun.is_finished asks).
FINISHED = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
# A day per shard's close jobs (jobs.py): their runs are keyed by day and shard too, and are
# not fetch runs; nor is any run that materialises assets without the fetch log.
SHARD_CLOSE_JOB, SHARD_PRIORITIES_JOB = "shard_close_job", "shard_priorities_job"
RECENT_RUNS = 20  # a partition's newest runs looked at for its latest fetch run


def is_fetch_run(run: DagsterRun) -> bool:
    if run.job_name in (SHARD_CLOSE_JOB, SHARD_PRIORITIES_JOB):
        return False
    return not run.asset_selection or AssetKey("fetch_log") in run.asset_selection  # (none: the whole job)


def latest_fetch_run(instance: DagsterInstance, date: str, shard: str) -> DagsterRun | None:
    """The newest run of fetch partition date|shard, however it was launched (every launch
    path tags a run with its partition key): a fetch run (is_fetch_run)."""
    key = str(fetch_partition_key(date, shard))
    records = instance.get_run_records(RunsFilter(tags={"dagster/partition": key}), limit=RECENT_RUNS)
    return next((record.dagster_run for record in records if is_fetch_run(record.dagster_run)), None)


def failed_fetch_runs(instance: DagsterInstance, date: str, shards: list[str]) -> dict[str, str]:
    """shard -> "run abcd1234: failure" for each shard whose latest run ended (after its retries)
    without success (failed or cancelled)."""
    failed = {}
    for shard in shards:
        run = latest_fetch_run(instance, date, shard)
        if run is not None and run.is_finished and run.status != DagsterRunStatus.SUCCESS:
            failed[shard] = f"run {run.run_id[:8]}: {run.status.value.lower()}"
    return failed


def landed_shards(instance: DagsterInstance, date: str, shards: list[str]) -> list[str]:
    """The shards whose latest fetch run of `date` succeeded."""
    return [shard for shard in shards if (run := latest_fetch_run(instance, date, shard)) is not None
            and run.status == DagsterRunStatus.SUCCESS]


def retry_command(date: str, shards: list[str]) -> str:
    """The command that fetches these shards of `date` again (finished ones are not fetched
    twice, one cut short resumes) and closes the day."""
    return f"python -m crawl_assets.cli.cycle --date {date} --shards {','.join(sorted(shards))}"


def no_shard_landed(date: str, failed: dict[str, str]) -> str:
    """The sentence for a day whose every fetch run failed: closing it would have nothing to
    close on (and on the crawl's first day, no fetch log at all)."""
    runs = ", ".join(f"{shard} ({why})" for shard, why in sorted(failed.items()))
    return (f"no shard of {date} landed, every fetch run failed: {runs}; the day is not closed on nothing: "
            f"fix what their failures say, then retry them: {retry_command(date, list(failed))} "
            "(or launch their fetch_job runs again in the UI: the day closes after them)")
