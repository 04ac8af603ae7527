"""The nightly cycle: from NIGHTLY_HOUR (UTC) the day's frontier_job run starts; the sensors in
sensors/ then fetch every shard and close the day. Running once the definitions load.

It looks every hour from NIGHTLY_HOUR on, and starts the day once (its run key): while a cycle
command is driving days, or earlier days are being crawled by hand, it records why it waits
(day_triggers.py) and looks again the next hour, instead of putting today before those days."""

from dagster import DefaultScheduleStatus, RunRequest, ScheduleEvaluationContext, SkipReason, schedule

from .day_triggers import started_by, trigger_hold
from .jobs import frontier_job

NIGHTLY_HOUR = 2  # UTC: the day's partition exists from midnight (end_offset=1)


@schedule(job=frontier_job, cron_schedule=f"0 {NIGHTLY_HOUR}-23 * * *", execution_timezone="UTC",
          default_status=DefaultScheduleStatus.RUNNING, name="nightly_cycle")
def nightly_cycle(context: ScheduleEvaluationContext):
    """Today's frontier_job (its partition: the tick's day), once, when nothing holds it."""
    day = context.scheduled_execution_time.date().isoformat()
    if run_id := started_by(context.instance, day):
        return SkipReason(f"{day}'s cycle was started already (run {run_id[:8]})")
    if hold := trigger_hold(context.instance, day):
        return SkipReason(f"{hold}; looked at again in an hour")
    return RunRequest(run_key=f"nightly-{day}", partition_key=day)


ALL_SCHEDULES = [nightly_cycle]
