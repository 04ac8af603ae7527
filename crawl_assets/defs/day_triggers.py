"""When a trigger may start a day's cycle by itself: the nightly schedule and changed seed files
(sensors/seed_changes.py) start `frontier_job` for a day unless a person is driving days.

Each day's statistics fold into the next, and a day before the crawl's newest is refused
(pipeline/day_order.py): a trigger that starts today while a person crawls earlier days with
the cycle command puts today before them, and every one of them is then refused. So a trigger
records itself and waits (trigger_hold says why) while

- a cycle command is alive (deployment/home_locks.py: each holds a lock for its whole length,
  between its runs too, where a check of its runs saw gaps);
- earlier days are being crawled by hand: the latest frontier a command ran was of a day before
  the day it ran (a catch-up, say one command a day), no later day was started since, and the
  trigger's day is later than that day's next day. It waits until the catch-up reaches the day
  before, or a person starts the day (both named in the sentence).
"""

from __future__ import annotations

import datetime as dt

from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from ..deployment.home_locks import live_commands
from .jobs import CLI_DRIVER, DRIVER_TAG, frontier_job

PARTITION_TAG = "dagster/partition"
RECENT_FRONTIER_RUNS = 100  # enough to see the newest day: frontier runs come a few a day


def trigger_hold(instance: DagsterInstance, day: str) -> str | None:
    """Why a trigger must not start `day`'s cycle now, or None when it may."""
    commands = live_commands(instance.root_directory)
    if commands:
        who = ", ".join(f"{c.get('what', 'a cycle command')} (pid {c.get('pid')})" for c in commands)
        return (f"a command is driving days ({who}): {day}'s cycle waits until it ends (its frontiers read "
                "the seed files themselves)")
    return catch_up_hold(instance, day)


def catch_up_hold(instance: DagsterInstance, day: str) -> str | None:
    """The catch-up rule of the module docstring."""
    runs = [r.dagster_run for r in instance.get_run_records(RunsFilter(job_name=frontier_job.name),
                                                            limit=RECENT_FRONTIER_RUNS)]  # newest first
    by_hand = next((run for run in runs if run.tags.get(DRIVER_TAG) == CLI_DRIVER and PARTITION_TAG in run.tags), None)
    if by_hand is None:
        return None
    crawled = by_hand.tags[PARTITION_TAG]
    record = instance.get_run_record_by_id(by_hand.run_id)
    ran_on = record.create_timestamp.astimezone(dt.timezone.utc).date().isoformat()
    newest = max(run.tags[PARTITION_TAG] for run in runs if PARTITION_TAG in run.tags)
    next_day = (dt.date.fromisoformat(crawled) + dt.timedelta(days=1)).isoformat()
    if crawled >= ran_on or newest > crawled or day <= next_day:
        return None
    before = (dt.date.fromisoformat(day) - dt.timedelta(days=1)).isoformat()
    days = next_day if next_day == before else f"{next_day} to {before}"
    return (f"earlier days are being crawled by hand (the last cycle command crawled {crawled}, on {ran_on}): "
            f"starting {day} now would put it before {days}, and the cycle command would then refuse them; "
            f"{day}'s cycle waits until they are crawled (python -m crawl_assets.cli.cycle --date {next_day}"
            f"{'' if next_day == before else f' --until {before}'}), or start it yourself "
            f"(python -m crawl_assets.cli.cycle --date {day})")


def started_by(instance: DagsterInstance, day: str) -> str | None:
    """The run that started `day`'s cycle already (a frontier_job run of it that did not fail)."""
    unfailed = [s for s in DagsterRunStatus if s not in (DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED)]
    records = instance.get_run_records(RunsFilter(job_name=frontier_job.name, statuses=unfailed,
                                                  tags={PARTITION_TAG: day}), limit=1)
    return records[0].dagster_run.run_id if records else None
