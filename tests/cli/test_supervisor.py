"""The supervisor of `dagster dev` (crawl_assets/cli/supervisor.py) takes along every process
what it runs left behind: `dagster dev` stops its webserver and daemon but leaves its code
server and run workers to their runs, and they went on fetching after the command had exited.
Here a shell stands in for `dagster dev`: it starts a grandchild and exits (or is stopped), and
the grandchild, orphaned, must be gone when the supervisor has exited, SIGTERM or not."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawl_assets.crawler.settings import PROJECT_ROOT

BOUND_S = 60  # the supervisor's SIGKILL comes STRAGGLER_GRACE_S (15 s) after its SIGTERM


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def supervised(script: str, tmp_path: Path) -> tuple[subprocess.Popen, int]:
    """The supervisor running `sh -c script` (no DAGSTER_HOME: no daemon lock), and the pid of
    the grandchild the script started (it writes it to a file)."""
    pid_file = tmp_path / "grandchild.pid"
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"} | {"PID_FILE": str(pid_file)}
    supervisor = subprocess.Popen([sys.executable, "-m", "crawl_assets.cli.supervisor", "sh", "-c", script],
                                  cwd=PROJECT_ROOT, env=env, start_new_session=True)
    deadline = time.monotonic() + BOUND_S
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert time.monotonic() < deadline and supervisor.poll() is None, "the grandchild never started"
        time.sleep(0.05)
    return supervisor, int(pid_file.read_text())


@pytest.fixture
def grandchildren():
    """Pids to SIGKILL after the test whatever happened (a failing test must leave nothing)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


# A grandchild that outlives its parent: started in the background, its pid written down.
ORPHAN = 'sleep 300 & echo $! > "$PID_FILE"; '
# One that ignores SIGTERM, as a run worker busy in a step may for a while.
STUBBORN = 'sh -c \'trap "" TERM; while :; do sleep 0.2; done\' & echo $! > "$PID_FILE"; '


def test_what_the_child_left_running_ends_before_the_supervisor_exits(tmp_path, grandchildren):
    supervisor, orphan = supervised(ORPHAN + "sleep 0.5; exit 0", tmp_path)
    grandchildren.append(orphan)
    assert supervisor.wait(timeout=BOUND_S) == 0  # the child's status
    assert not alive(orphan)


def test_a_leftover_that_ignores_sigterm_is_killed_after_the_grace(tmp_path, grandchildren):
    supervisor, stubborn = supervised(STUBBORN + "sleep 0.5; exit 3", tmp_path)
    grandchildren.append(stubborn)
    assert supervisor.wait(timeout=BOUND_S) == 3
    assert not alive(stubborn)


def test_a_supervisor_told_to_stop_stops_its_child_and_what_the_child_started(tmp_path, grandchildren):
    """SIGTERM, as from the kernel when the command above it died by SIGKILL (its parent-death
    signal), or from `kill`: the child is stopped, and its grandchild goes with it."""
    supervisor, orphan = supervised(ORPHAN + "exec sleep 300", tmp_path)
    grandchildren.append(orphan)
    supervisor.send_signal(signal.SIGTERM)
    supervisor.wait(timeout=BOUND_S)
    assert not alive(orphan)
