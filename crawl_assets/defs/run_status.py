"""What the instance knows about a day's fetch runs: the latest run of each shard's partition.
The day-close sensor waits on it; the day report names the shards whose run failed."""

from __future__ import annotations

from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter

from .partitions import fetch_partition_key

# A run in one of these states will not change again (what DagsterRun.is_finished asks).
FINISHED = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}


def latest_fetch_run(instance: DagsterInstance, date: str, shard: str) -> DagsterRun | None:
    """The newest run of fetch partition date|shard, however it was launched (every launch
    path tags a run with its partition key)."""
    key = str(fetch_partition_key(date, shard))
    records = instance.get_run_records(RunsFilter(tags={"dagster/partition": key}), limit=1)
    return records[0].dagster_run if records else None


def failed_fetch_runs(instance: DagsterInstance, date: str, shards: list[str]) -> dict[str, str]:
    """shard -> "run abcd1234: failure" for each shard whose latest run ended (after its retries)
    without success (failed or cancelled)."""
    failed = {}
    for shard in shards:
        run = latest_fetch_run(instance, date, shard)
        if run is not None and run.is_finished and run.status != DagsterRunStatus.SUCCESS:
            failed[shard] = f"run {run.run_id[:8]}: {run.status.value.lower()}"
    return failed
