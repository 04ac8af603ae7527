"""The commands as an operator runs them on one DAGSTER_HOME: `make ui` in the background stopped
by SIGTERM, a cycle command right after it, killed by SIGKILL. None hangs, and none leaves a
Dagster process or a live-looking heartbeat behind. (Whole cycles through a daemon are
tests/orchestration's; these tests stop at what the commands start.)

Every wait here is bounded: a command that hangs fails its test instead of the suite."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance

from crawl_assets.cli.launcher import daemon_running, open_instance
from crawl_assets.crawler.settings import PROJECT_ROOT

from dagster_deployment import PRELOADED_RUNS_ENV
from support import DEMO_SETTINGS

DAY1 = "2026-11-20"
STOP_BOUND_S = 60  # dagster dev stops in seconds; this bounds a loaded machine
pytestmark = pytest.mark.timeout(1800)


def session_processes(sid: int) -> list[str]:
    """The command lines of the live processes in session `sid` (zombies are gone already)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(f"{pid} {command[:120]}")
    return found


def children(pid: int) -> list[int]:
    return [int(p) for p in filter(str.isdigit, os.listdir("/proc"))
            if Path(f"/proc/{p}/stat").exists() and _parent(int(p)) == pid]


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def wait_until_gone(sid: int, bound_s: float = STOP_BOUND_S) -> None:
    deadline = time.monotonic() + bound_s
    while (left := session_processes(sid)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, left


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Crawl:
    """Settings of a one-shard crawl and its DAGSTER_HOME (nothing is fetched: the commands
    are stopped once their services are up)."""

    def __init__(self, folder: Path):
        self.home = folder / "dagster_home"
        self.home.mkdir()
        shutil.copy(PROJECT_ROOT / "dagster.yaml", self.home / "dagster.yaml")
        seeds = folder / "seeds"
        seeds.mkdir()
        (seeds / "demo.txt").write_text("http://h0000.demo.test/\n")
        overlay = folder / "commands.toml"
        overlay.write_text(f'[crawl]\ndata_root = "{folder / "data"}"\nseeds_dir = "{seeds}"\nshard_count = 1\n'
                           'default_delay_s = 0.05\nstart_date = "2026-11-01"\n')
        self.settings = f"{DEMO_SETTINGS}:{overlay}"
        self.env = os.environ | PRELOADED_RUNS_ENV | {"DAGSTER_HOME": str(self.home),
                                                       "RECRAWL_SETTINGS": self.settings}

    def cycle(self, day: str, **popen) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "crawl_assets.cli.cycle", "--date", day], cwd=PROJECT_ROOT,
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)

    def instance(self) -> DagsterInstance:
        return open_instance(self.home)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    return Crawl(tmp_path_factory.mktemp("commands"))


def ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell's `&` does to a background job


def test_make_ui_in_the_background_stops_on_sigterm(crawl, tmp_path):
    port = free_port()
    with open(tmp_path / "make_ui.log", "wb") as log:
        ui = subprocess.Popen(["make", "ui", f"DAGSTER_HOME={crawl.home}", f"UI_PORT={port}",
                               f"SETTINGS={crawl.settings}"], cwd=PROJECT_ROOT, env=crawl.env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=ignore_sigint)
    try:
        instance = crawl.instance()
        deadline = time.monotonic() + 300
        while not daemon_running(instance):
            assert ui.poll() is None and time.monotonic() < deadline, (tmp_path / "make_ui.log").read_text()
            time.sleep(1)
    finally:
        ui.send_signal(signal.SIGTERM)  # to make alone, as `kill $!` in a script
        ui.wait(timeout=STOP_BOUND_S)
    wait_until_gone(ui.pid)  # dagster dev, its webserver, daemon and code servers
    # Its daemon's heartbeats went with it: the next command must not take it for alive.
    assert instance.get_daemon_heartbeats() == {}
    instance.dispose()


def services_line(command: subprocess.Popen) -> str:
    """The line in which a cycle command says through which services it submits its runs."""
    lines = []
    while not any(line.startswith("submitting runs through") for line in lines):
        line = command.stdout.readline()
        assert line, lines  # the command ended before its services came up
        lines.append(line)
    return lines[-1]


def test_a_command_right_after_starts_its_own_daemon_which_goes_when_the_command_is_killed(crawl):
    """Run after make ui stopped on the same DAGSTER_HOME (the test above): the command starts
    its own dagster dev, where it used to take the stopped daemon for alive and wait for ever.
    A second command started while that dagster dev is up uses its daemon (two daemons on one
    instance would both dequeue) and starts a webserver only."""
    cycle = crawl.cycle(DAY1)
    assert "(dagster dev started for this command)" in services_line(cycle)
    (supervisor,) = children(cycle.pid)
    assert any("dagster dev" in p for p in session_processes(supervisor))
    second = crawl.cycle(DAY1)
    try:
        assert "(the running daemon)" in services_line(second)
        (second_supervisor,) = children(second.pid)
        assert not any("dagster dev" in p or "dagster-daemon" in p for p in session_processes(second_supervisor))
    finally:
        second.send_signal(signal.SIGKILL)
        second.wait()
    wait_until_gone(second_supervisor)  # its webserver
    instance = crawl.instance()
    assert daemon_running(instance)  # the first command's daemon is untouched
    instance.dispose()
    cycle.send_signal(signal.SIGKILL)
    cycle.wait()
    wait_until_gone(supervisor)  # dagster dev, its webserver, daemon and code servers
    instance = crawl.instance()
    assert instance.get_daemon_heartbeats() == {} and not daemon_running(instance)
    instance.dispose()
