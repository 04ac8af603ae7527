"""What holds the nightly schedule and the seed-change sensor from starting a day by itself
(defs/day_triggers.py), asked of an instance holding hand-made frontier runs, each created at
a chosen time: a live cycle command, and a catch-up of earlier days crawled by hand."""

import datetime as dt
import fcntl
import os
import time

import pytest
from dagster import DagsterInstance, DagsterRun, DagsterRunStatus

from crawl_assets.defs.day_triggers import started_by, trigger_hold
from crawl_assets.defs.jobs import CLI_DRIVER, DRIVER_TAG, day_close_job, frontier_job
from crawl_assets.deployment.home_locks import command_lock, commands_dir

BY_HAND = {DRIVER_TAG: CLI_DRIVER}  # what the cycle command tags its runs with


@pytest.fixture
def instance(tmp_path):
    return DagsterInstance.ephemeral(tempdir=str(tmp_path))


def frontier_run(instance, day: str | None, created: str, job=frontier_job, status=DagsterRunStatus.SUCCESS,
                 **tags) -> DagsterRun:
    """A run of `day`'s frontier (None: of a range of days), created at `created` (UTC)."""
    tags = ({"dagster/partition": day} if day else {"dagster/asset_partition_range_start": "2026-11-01",
                                                    "dagster/asset_partition_range_end": "2026-11-03"}) | tags
    run = DagsterRun(job_name=job.name, status=status, tags=tags)
    when = dt.datetime.fromisoformat(created).replace(tzinfo=dt.timezone.utc)
    return instance.run_storage.add_historical_run(run, when)


def test_nothing_holds_a_trigger_without_a_live_command_or_a_day_crawled_by_hand(instance):
    assert trigger_hold(instance, "2026-11-25") is None
    frontier_run(instance, "2026-11-10", "2026-11-25T09:00")  # the schedule's own runs, of any day
    frontier_run(instance, None, "2026-11-25T09:30")
    assert trigger_hold(instance, "2026-11-25") is None


def test_a_live_cycle_command_holds_every_trigger_and_each_is_named(instance):
    home = instance.root_directory
    with command_lock(home, "cycle of 2026-11-20"), command_lock(home, "cycle of 2026-11-21"):
        hold = trigger_hold(instance, "2026-11-25")
    assert hold == (f"a command is driving days (cycle of 2026-11-20 (pid {os.getpid()}), cycle of 2026-11-21 "
                    f"(pid {os.getpid()})): 2026-11-25's cycle waits until it ends (its frontiers read the seed "
                    "files themselves)")
    assert trigger_hold(instance, "2026-11-25") is None  # both ended

    # A command that has taken its lock but not yet written who it is holds the triggers too.
    commands_dir(home).mkdir(parents=True, exist_ok=True)
    fd = os.open(commands_dir(home) / f"{os.getpid()}-{time.time_ns()}.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert trigger_hold(instance, "2026-11-25").startswith(
            "a command is driving days (a cycle command (pid None)): 2026-11-25's cycle waits")
    finally:
        os.close(fd)


def test_a_catch_up_by_hand_holds_the_days_after_its_next_day(instance):
    """A command ran on the 25th for the 10th, nothing since: the 11th may start (the catch-up's
    next day), the 12th on would be put before the days the next commands crawl."""
    frontier_run(instance, "2026-11-08", "2026-11-23T09:00")  # the schedule's, earlier
    frontier_run(instance, "2026-11-10", "2026-11-25T09:00", **BY_HAND)
    frontier_run(instance, None, "2026-11-25T09:30")  # a range of days: no day of its own
    assert trigger_hold(instance, "2026-11-25") == (
        "earlier days are being crawled by hand (the last cycle command crawled 2026-11-10, on 2026-11-25): "
        "starting 2026-11-25 now would put it before 2026-11-11 to 2026-11-24, and the cycle command would then "
        "refuse them; 2026-11-25's cycle waits until they are crawled (python -m crawl_assets.cli.cycle --date "
        "2026-11-11 --until 2026-11-24), or start it yourself (python -m crawl_assets.cli.cycle --date 2026-11-25)")
    assert trigger_hold(instance, "2026-11-12") == (
        "earlier days are being crawled by hand (the last cycle command crawled 2026-11-10, on 2026-11-25): "
        "starting 2026-11-12 now would put it before 2026-11-11, and the cycle command would then refuse them; "
        "2026-11-12's cycle waits until they are crawled (python -m crawl_assets.cli.cycle --date 2026-11-11), "
        "or start it yourself (python -m crawl_assets.cli.cycle --date 2026-11-12)")
    assert trigger_hold(instance, "2026-11-11") is None
    assert trigger_hold(instance, "2026-11-09") is None

    frontier_run(instance, "2026-11-05", "2026-11-25T10:00")  # an earlier day started otherwise: still held
    assert trigger_hold(instance, "2026-11-25").startswith("earlier days are being crawled by hand (the last "
                                                           "cycle command crawled 2026-11-10, on 2026-11-25)")
    frontier_run(instance, "2026-11-11", "2026-11-25T11:00")  # a later day started: no catch-up left
    assert trigger_hold(instance, "2026-11-25") is None


def test_the_latest_frontier_run_by_hand_is_the_catch_up(instance):
    """Of the commands' frontier runs the newest with a day of its own counts; runs of the other
    jobs (fetch, close) of the commands do not."""
    frontier_run(instance, "2026-11-10", "2026-11-25T09:00", **BY_HAND)
    frontier_run(instance, "2026-11-20", "2026-11-25T10:00", **BY_HAND)
    assert trigger_hold(instance, "2026-11-25").startswith("earlier days are being crawled by hand (the last "
                                                           "cycle command crawled 2026-11-20, on 2026-11-25)")
    frontier_run(instance, None, "2026-11-25T11:00", **BY_HAND)
    frontier_run(instance, "2026-11-24", "2026-11-25T12:00", job=day_close_job, **BY_HAND)
    assert trigger_hold(instance, "2026-11-25").startswith("earlier days are being crawled by hand (the last "
                                                           "cycle command crawled 2026-11-20, on 2026-11-25)")
    frontier_run(instance, "2026-11-24", "2026-11-25T13:00", **BY_HAND)  # caught up to the day before
    assert trigger_hold(instance, "2026-11-25") is None


def test_a_command_that_crawled_its_own_day_or_a_later_one_is_no_catch_up(instance, monkeypatch):
    """A command run on the 25th for the 25th: the 28th, days later, starts. The day it ran on is
    the UTC day (the partitions' days), whatever the machine's time zone: at 20:00 UTC it is
    already the 26th at UTC+14, where the 25th would look crawled a day late."""
    frontier_run(instance, "2026-11-25", "2026-11-25T20:00", **BY_HAND)
    assert trigger_hold(instance, "2026-11-28") is None
    monkeypatch.setenv("TZ", "Pacific/Kiritimati")  # UTC+14
    time.tzset()
    try:
        assert trigger_hold(instance, "2026-11-28") is None
    finally:
        monkeypatch.undo()
        time.tzset()
    frontier_run(instance, "2026-11-27", "2026-11-25T21:00", **BY_HAND)  # a day ahead, by hand
    assert trigger_hold(instance, "2026-11-30") is None


def test_a_day_is_started_by_its_frontier_run_unless_that_failed_or_was_cancelled(instance):
    assert started_by(instance, "2026-11-25") is None
    frontier_run(instance, "2026-11-25", "2026-11-25T02:00", status=DagsterRunStatus.FAILURE)
    frontier_run(instance, "2026-11-25", "2026-11-25T03:00", status=DagsterRunStatus.CANCELED)
    frontier_run(instance, "2026-11-24", "2026-11-25T04:00", status=DagsterRunStatus.STARTED)  # another day
    frontier_run(instance, "2026-11-25", "2026-11-25T05:00", job=day_close_job)  # another job of the day
    assert started_by(instance, "2026-11-25") is None
    for status in (DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTED, DagsterRunStatus.SUCCESS):
        run = frontier_run(instance, "2026-11-25", "2026-11-25T06:00", status=status)
        assert started_by(instance, "2026-11-25") == run.run_id
