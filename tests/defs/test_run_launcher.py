"""Run monitoring can tell a run whose process died: the instance's launcher checks the pid the
run's process logged, so a killed run is marked failed and frees its shard (dagster.yaml)."""

import logging
import shutil
import signal
import subprocess
import time

from dagster import DagsterEventType, DagsterRun, DagsterRunStatus
from dagster._core.events import DagsterEvent, EngineEventData
from dagster._core.events.log import EventLogEntry
from dagster._core.launcher import WorkerStatus

from crawl_assets.cli.launcher import open_instance
from crawl_assets.crawler.settings import PROJECT_ROOT
from crawl_assets.defs.run_launcher import STARTED_PROCESS, LocalRunLauncher, process_started_at


def test_a_run_whose_process_was_killed_is_reported_failed(tmp_path):
    shutil.copy(PROJECT_ROOT / "dagster.yaml", tmp_path / "dagster.yaml")
    instance = open_instance(tmp_path)
    launcher = instance.run_launcher
    assert isinstance(launcher, LocalRunLauncher) and instance.run_monitoring_enabled
    assert instance.run_monitoring_poll_interval_seconds <= 15  # what README's Operations promises

    run = instance.add_run(DagsterRun(job_name="fetch_job", run_id="0" * 36, status=DagsterRunStatus.STARTED))
    assert launcher.check_run_worker_health(run).status == WorkerStatus.RUNNING  # no process logged yet

    worker = subprocess.Popen(["sleep", "60"])
    instance.report_engine_event(f"{STARTED_PROCESS} (pid: {worker.pid}).", run,
                                 EngineEventData.in_process(worker.pid))
    assert launcher.check_run_worker_health(run).status == WorkerStatus.RUNNING
    worker.send_signal(signal.SIGKILL)
    time.sleep(0.2)  # dead, not yet reaped by its parent (as under a code server): a zombie
    health = launcher.check_run_worker_health(run)
    assert health.status == WorkerStatus.FAILED and f"pid {worker.pid}" in health.msg, health
    worker.wait()
    assert launcher.check_run_worker_health(run).status == WorkerStatus.FAILED
    instance.dispose()


def log_started_process(instance, run: DagsterRun, pid: int, at: float) -> None:
    """The run process's "Started process" event, as written at time `at`."""
    message = f"{STARTED_PROCESS} (pid: {pid})."
    event = DagsterEvent(DagsterEventType.ENGINE_EVENT.value, run.job_name, message=message,
                         event_specific_data=EngineEventData.in_process(pid))
    instance.handle_new_event(EventLogEntry(error_info=None, level=logging.INFO, user_message=message,
                                            run_id=run.run_id, timestamp=at, job_name=run.job_name,
                                            dagster_event=event))


def test_a_pid_now_held_by_a_later_process_is_not_the_runs_process(tmp_path):
    """The run's process died and the system gave its pid to a process started since: that
    process is not the run's, and the run is reported failed (it would hold its shard forever)."""
    shutil.copy(PROJECT_ROOT / "dagster.yaml", tmp_path / "dagster.yaml")
    instance = open_instance(tmp_path)
    launcher = instance.run_launcher
    before = time.time()
    worker = subprocess.Popen(["sleep", "60"])
    try:
        started = process_started_at(worker.pid)
        # /proc's start time, in clock ticks since boot (whose time is in whole seconds): within
        # a second of the wall clock.
        assert started is not None and before - 1.1 <= started <= time.time() + 1.1, (before, started)
        reused = instance.add_run(DagsterRun(job_name="fetch_job", run_id="1" * 36, status=DagsterRunStatus.STARTED))
        log_started_process(instance, reused, worker.pid, started - 30)  # logged 30 s before it started
        health = launcher.check_run_worker_health(reused)
        assert health.status == WorkerStatus.FAILED and f"pid {worker.pid}" in health.msg, health
        # Logged as it started (the run's own process, a tick's rounding either way): alive.
        own = instance.add_run(DagsterRun(job_name="fetch_job", run_id="2" * 36, status=DagsterRunStatus.STARTED))
        log_started_process(instance, own, worker.pid, started + 0.5)
        assert launcher.check_run_worker_health(own).status == WorkerStatus.RUNNING
    finally:
        worker.kill()
        worker.wait()
        instance.dispose()
