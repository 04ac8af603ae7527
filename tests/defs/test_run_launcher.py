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
    unlogged = launcher.check_run_worker_health(run)  # no process logged yet: no judgement
    assert (unlogged.status, unlogged.msg) == (WorkerStatus.RUNNING, "no run process recorded")

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
    process is not the run's, and the run is reported failed (it would hold its shard forever).
    A start up to a second after the event is the run's own (the boot time /proc counts from is
    in whole seconds); a later event of the run naming another pid (a step's process) does not
    replace the run's."""
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
        health = {}
        for n, logged in enumerate((started - 30, started - 1.5, started - 1.0, started + 0.5)):
            run = instance.add_run(DagsterRun(job_name="fetch_job", run_id=str(n + 1) * 36,
                                              status=DagsterRunStatus.STARTED))
            log_started_process(instance, run, worker.pid, logged)
            health[started - logged] = launcher.check_run_worker_health(run)
        assert {gap: result.status for gap, result in health.items()} == {
            30: WorkerStatus.FAILED, 1.5: WorkerStatus.FAILED, 1.0: WorkerStatus.RUNNING, -0.5: WorkerStatus.RUNNING}
        assert health[30].msg == (f"the run's process (pid {worker.pid}) is gone: it was killed or crashed; "
                                  "run the partition again and a fetch batch resumes from its last checkpoint")
        assert health[-0.5].msg == f"pid {worker.pid} alive"
        # A step's own process logs its pid too, in another sentence: the run's is still the one.
        step = subprocess.Popen(["true"])
        step.wait()  # gone since
        instance.report_engine_event(f"Executing steps in process (pid: {step.pid}).", run,
                                     EngineEventData.in_process(step.pid))
        assert launcher.check_run_worker_health(run).status == WorkerStatus.RUNNING
    finally:
        worker.kill()
        worker.wait()
        instance.dispose()


def test_a_process_whose_name_holds_a_parenthesis_and_spaces_is_read(tmp_path):
    """/proc/PID/stat puts the command name in parentheses, and a name may hold ") (": its
    fields are read after the last one."""
    odd = tmp_path / "a) (b c) d"
    odd.symlink_to(shutil.which("sleep"))
    before = time.time()
    worker = subprocess.Popen([str(odd), "60"])
    try:
        started = process_started_at(worker.pid)
        assert started is not None and before - 1.1 <= started <= time.time() + 1.1, (before, started)
    finally:
        worker.kill()
        worker.wait()
    assert process_started_at(worker.pid) is None  # reaped: no such process
