"""Changed seed files start today's seeds and frontier (frontier_job); the fetch and the rest
of the day follow through the day-chain sensors. While a person drives days (a cycle command is
alive, or earlier days are being crawled by hand: crawl_assets/defs/day_triggers.py), a change
is recorded and waits: a frontier of today in the middle of earlier days would put a later day
before them (the day order refuses the earlier days then). The waiting change starts today's
cycle once nothing holds it, unless today's has started by then (its frontier read the seeds)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

from dagster import DefaultSensorStatus, RunRequest, SensorEvaluationContext, SensorResult, SkipReason, sensor

from crawl_assets.crawler.settings import load_settings
from crawl_assets.defs.day_triggers import started_by, trigger_hold
from crawl_assets.defs.jobs import frontier_job

from .pace import SEED_INTERVAL_S

SEED_PATTERNS = ("*.txt", "*.csv")


def seed_fingerprint(seeds_dir: Path) -> str:
    """One digest of every seed file's name and content: it changes when any file does."""
    digest = hashlib.sha256()
    for pattern in SEED_PATTERNS:
        for path in sorted(seeds_dir.glob(pattern)):
            digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def read_cursor(cursor: str | None) -> dict | None:
    """{"files": fingerprint, "waiting": a change not acted on yet}; an older cursor held the
    fingerprint alone."""
    if cursor is None:
        return None
    return json.loads(cursor) if cursor.startswith("{") else {"files": cursor, "waiting": False}


@sensor(job=frontier_job, default_status=DefaultSensorStatus.RUNNING, minimum_interval_seconds=SEED_INTERVAL_S)
def seed_files_changed(context: SensorEvaluationContext):
    """The first tick records the seed files as they are (opening the UI starts no crawl);
    each later change requests today's frontier_job run, once per content, when nothing holds it."""
    fingerprint = seed_fingerprint(load_settings().seeds_dir)
    state = read_cursor(context.cursor)
    if state is None:
        return SensorResult(cursor=json.dumps({"files": fingerprint, "waiting": False}),
                            skip_reason="recorded the seed files as they are now")
    if state["files"] == fingerprint and not state["waiting"]:
        return SkipReason("the seed files have not changed")
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    if hold := trigger_hold(context.instance, today):
        return SensorResult(cursor=json.dumps({"files": fingerprint, "waiting": True}),
                            skip_reason=f"the seed files changed and wait: {hold}")
    done = json.dumps({"files": fingerprint, "waiting": False})
    if run_id := started_by(context.instance, today):
        return SensorResult(cursor=done, skip_reason=f"the seed files changed, but {today}'s cycle was started "
                                                     f"already (run {run_id[:8]}): the new seeds enter the next day")
    return SensorResult(run_requests=[RunRequest(run_key=f"seeds-{fingerprint[:16]}-{today}", partition_key=today)],
                        cursor=done)
