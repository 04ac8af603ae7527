"""Run monitoring can tell a run whose process died: the instance's launcher checks the pid the
run's process logged, so a killed run is marked failed and frees its shard (dagster.yaml)."""

import shutil
import signal
import subprocess
import time

from dagster import DagsterRun, DagsterRunStatus
from dagster._core.events import EngineEventData
from dagster._core.launcher import WorkerStatus

from crawl_assets.cli.launcher import open_instance
from crawl_assets.crawler.settings import PROJECT_ROOT
from crawl_assets.defs.run_launcher import STARTED_PROCESS, LocalRunLauncher


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
