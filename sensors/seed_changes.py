"""Changed seed files start today's seeds and frontier (frontier_job); the fetch and the rest
of the day follow through the day-chain sensors. While a command (make crawl, make demo) is
submitting its days, a change is only recorded: the command's frontiers read the seed files
themselves, and a frontier for today in the middle of the demo's earlier days would put a later
day before them (the day order refuses the earlier days then)."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

from dagster import (
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from crawl_assets.crawler.settings import load_settings
from crawl_assets.defs.jobs import CLI_DRIVER, DRIVER_TAG, frontier_job

SEED_PATTERNS = ("*.txt", "*.csv")
UNFINISHED = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
              DagsterRunStatus.STARTED]


def seed_fingerprint(seeds_dir: Path) -> str:
    """One digest of every seed file's name and content: it changes when any file does."""
    digest = hashlib.sha256()
    for pattern in SEED_PATTERNS:
        for path in sorted(seeds_dir.glob(pattern)):
            digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@sensor(job=frontier_job, default_status=DefaultSensorStatus.RUNNING, minimum_interval_seconds=60)
def seed_files_changed(context: SensorEvaluationContext):
    """The first tick records the seed files as they are (opening the UI starts no crawl);
    each later change requests today's frontier_job run, once per content."""
    fingerprint = seed_fingerprint(load_settings().seeds_dir)
    if context.cursor is None:
        return SensorResult(cursor=fingerprint, skip_reason="recorded the seed files as they are now")
    if context.cursor == fingerprint:
        return SkipReason("the seed files have not changed")
    if command_running(context.instance):
        return SensorResult(cursor=fingerprint, skip_reason="a command is crawling: its frontiers read the seed files")
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    return SensorResult(run_requests=[RunRequest(run_key=f"seeds-{fingerprint[:16]}-{today}", partition_key=today)],
                        cursor=fingerprint)


def command_running(instance) -> bool:
    """A run a command submitted (tagged DRIVER_TAG) is queued or running."""
    unfinished = RunsFilter(statuses=UNFINISHED, tags={DRIVER_TAG: CLI_DRIVER})
    return bool(instance.get_run_records(unfinished, limit=1))
