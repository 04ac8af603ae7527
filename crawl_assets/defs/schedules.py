"""The nightly cycle: at NIGHTLY_HOUR (UTC) the day's frontier_job run starts; the sensors in
sensors/ then fetch every shard and close the day. Running once the definitions load."""

from dagster import DefaultScheduleStatus, build_schedule_from_partitioned_job

from .jobs import frontier_job

NIGHTLY_HOUR = 2  # UTC: the day's partition exists from midnight (end_offset=1)

nightly_cycle = build_schedule_from_partitioned_job(
    frontier_job, hour_of_day=NIGHTLY_HOUR, default_status=DefaultScheduleStatus.RUNNING,
    name="nightly_cycle")

ALL_SCHEDULES = [nightly_cycle]
