"""The instance's run launcher (dagster.yaml): Dagster's DefaultRunLauncher, which also answers
run monitoring's question "is this run's process still alive?". Dagster's own cannot, so a run
whose process died (kill -9, an OOM kill, a power cut) stayed STARTED for ever and held its
shard's one-run slot; with an answer, the monitoring daemon marks it failed within
`run_monitoring.poll_interval_seconds` and the shard's next run is dequeued.

The run's process is the one that wrote "Started process for run (pid: N)": a child of the code
server, on the machine of the daemon that launched it (where `dagster dev` runs)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from dagster import DagsterEventType, DagsterRun, DefaultRunLauncher

# Not exported at Dagster's top level; the names run monitoring checks against.
from dagster._core.launcher import CheckRunHealthResult, WorkerStatus

STARTED_PROCESS = "Started process for run"  # the run process's first engine event


def process_gone(pid: int) -> str:
    """What run monitoring says of a run whose process died; the cycle command prints it."""
    return (f"the run's process (pid {pid}) is gone: it was killed or crashed; run the partition again "
            "and a fetch batch resumes from its last checkpoint")


# The sentence inside the run's failure event, which wraps it in Dagster's words.
PROCESS_GONE = re.compile(re.escape(process_gone(12345)).replace("12345", r"\d+"))
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_started_at(pid: int) -> float | None:
    """When process `pid` started (Unix time), or None if there is no such process or it is a
    zombie (dead, not yet reaped by the code server that started it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = next(line for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime"))
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    if fields[0] in ("Z", "X"):
        return None
    return int(boot.split()[1]) + int(fields[19]) / CLOCK_TICKS


class LocalRunLauncher(DefaultRunLauncher):
    """DefaultRunLauncher whose runs' processes run monitoring can check."""

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        started = self.run_process(run.run_id)
        if started is None:  # not started by a code server (materialize() in a test): no judgement
            return CheckRunHealthResult(WorkerStatus.RUNNING, "no run process recorded")
        pid, logged_at = started
        since = process_started_at(pid)
        # A pid that started after the run logged it belongs to another process now.
        if since is None or since > logged_at + 1.0:
            return CheckRunHealthResult(WorkerStatus.FAILED, process_gone(pid))
        return CheckRunHealthResult(WorkerStatus.RUNNING, f"pid {pid} alive")

    def run_process(self, run_id: str) -> tuple[int, float] | None:
        """The pid that the run's process logged, and when, from its latest start."""
        for entry in reversed(self._instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT)):
            event = entry.dagster_event
            pid = event.engine_event_data.metadata.get("pid") if event and event.engine_event_data else None
            if pid is not None and (event.message or "").startswith(STARTED_PROCESS):
                return int(pid.value), entry.timestamp
        return None
