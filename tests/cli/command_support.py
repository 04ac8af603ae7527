"""What the command tests (tests/cli/test_commands.py) and bench/crash_recovery.py share: a
one-shard crawl of a demo web with its own data root, seeds and DAGSTER_HOME, the cycle
command started on it, and looks at the processes it leaves (by session, by DAGSTER_HOME)."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from dagster import DagsterInstance

from crawl_assets.cli.launcher import open_instance
from crawl_assets.crawler.settings import PROJECT_ROOT
from crawl_assets.storage.layout import warc_dir

from dagster_deployment import PRELOADED_RUNS_ENV
from support import DEMO_SETTINGS, DemoWebProcess

STOP_BOUND_S = 90  # dagster dev stops in seconds; this bounds a loaded machine
COMMAND_BOUND_S = 600  # one small day through the run queue, dagster dev's start included


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


def processes_of_home(home: Path) -> list[str]:
    """Live processes started with DAGSTER_HOME=home in their environment (wherever they moved)."""
    needle = f"DAGSTER_HOME={home}\0".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if needle in Path(f"/proc/{pid}/environ").read_bytes() + b"\0":
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                if state != "Z":
                    found.append(f"{pid} {command[:120]}")
        except OSError:
            continue
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
    """One shard of a small demo web, its data root, seeds and DAGSTER_HOME."""

    def __init__(self, folder: Path, web: DemoWebProcess, delay_s: float, pages_per_host: int = 12):
        self.folder, self.web, self.pages_per_host = folder, web, pages_per_host
        self.home = folder / "dagster_home"
        self.home.mkdir()
        shutil.copy(PROJECT_ROOT / "dagster.yaml", self.home / "dagster.yaml")
        self.seeds = folder / "seeds"
        self.seeds.mkdir()
        self.write_seeds(web.web.seed_urls()[:2])
        self.root = folder / "data"
        self.settings = f"{DEMO_SETTINGS}:{self.overlay('commands.toml', delay_s)}"
        self.quick_settings = f"{DEMO_SETTINGS}:{self.overlay('quick.toml', 0.05)}"  # same crawl, shorter delay
        self.env = os.environ | PRELOADED_RUNS_ENV | {"DAGSTER_HOME": str(self.home), "RECRAWL_SETTINGS": self.settings,
                                                       "RECRAWL_SENSOR_INTERVAL_S": "3"}  # seed files every 6 s

    def overlay(self, name: str, delay_s: float) -> Path:
        path = self.folder / name
        path.write_text(f'[crawl]\ndata_root = "{self.root}"\nseeds_dir = "{self.seeds}"\nshard_count = 1\n'
                        f'default_delay_s = {delay_s}\nstart_date = "2026-11-01"\ncheckpoint_interval_s = 1\n'
                        f'fetch_retry_delay_s = 5\nmax_pages_per_host = {self.pages_per_host}\nrender_hosts = []\n')
        return path

    def write_seeds(self, urls: list[str]) -> None:
        (self.seeds / "demo.txt").write_text("\n".join(urls) + "\n")

    def cycle(self, day: str, settings: str | None = None, extra: tuple[str, ...] = (), **popen) -> subprocess.Popen:
        env = self.env | {"RECRAWL_SETTINGS": settings or self.settings}
        popen.setdefault("preexec_fn", as_a_terminals_job)
        return subprocess.Popen([sys.executable, "-m", "crawl_assets.cli.cycle", "--date", day, *extra],
                                cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, **popen)

    def instance(self) -> DagsterInstance:
        return open_instance(self.home)


def as_a_terminals_job() -> None:
    """preexec_fn of a command typed at a terminal: its shell starts it with the stop signals at
    their defaults and unblocked, whatever the test process's own are (a pytest-xdist worker's
    may not be: a command started from it then took no Ctrl-C)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


def services_line(command: subprocess.Popen) -> tuple[str, list[str]]:
    """The line in which a cycle command says through which services it submits its runs."""
    lines = []
    while not any(line.startswith("submitting runs through") for line in lines):
        line = command.stdout.readline()
        assert line, lines  # the command ended before its services came up
        lines.append(line)
    return lines[-1], lines


def size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:  # closed (renamed) meanwhile
        return 0


def warc_files(crawl, day: str) -> set[Path]:
    """Every file in the day's WARC folder now (before a command starts: see wait_fetching)."""
    return set(warc_dir(crawl.root, day, "s00").glob("*"))


def wait_fetching(crawl, day: str, command: subprocess.Popen, earlier: set[Path]) -> list[Path]:
    """Once the command's fetch run of `day` is fetching: its open WARC files, named after the
    run (`earlier`: the folder's files before the command started; one left open by an earlier
    run is not this one's)."""
    folder = warc_dir(crawl.root, day, "s00")
    deadline = time.monotonic() + COMMAND_BOUND_S
    while True:
        opened = sorted(set(folder.glob("*.open")) - earlier)
        if any(size_of(p) > 10_000 for p in opened):
            return opened
        assert command.poll() is None and time.monotonic() < deadline, command.stdout.read()
        time.sleep(0.2)


def finish(command: subprocess.Popen) -> str:
    output, _ = command.communicate(timeout=COMMAND_BOUND_S)
    return output
