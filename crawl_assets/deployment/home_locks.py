"""Who serves and who drives a DAGSTER_HOME, known at once: lock files that live processes hold.

A daemon's heartbeats say it was alive up to two minutes ago, so a daemon killed a second ago
looks alive, and a command run right after a crash waited on it. A lock held with flock is
released by the kernel the moment its holder dies, SIGKILL included:

- `daemon.lock` (DAGSTER_HOME/recrawl/): held by crawl_assets/cli/supervisor.py while it runs
  `dagster dev` (and by that process too, so the lock lasts until the daemon has stopped). It
  records the supervisor's pid, what it runs and whether it is serving or stopping. Held and
  serving: a daemon serves the home. Held while stopping, or by a supervisor that died (its
  dagster dev winding down): wait for it to be let go. Free with a record: the daemon died
  without stopping (killed), and its heartbeats are a dead daemon's. No record: no supervised
  daemon; only heartbeats can tell (a daemon started by hand).
- `commands/<pid>-<start>.lock`: one for each live cycle command (make crawl, make demo), held
  for its whole length, between its runs too: while one is held, the sensors' and the
  schedule's triggers record and wait (sensors/day_triggers.py).

Locks live on the machine that holds DAGSTER_HOME; processes of other machines do not hold
them (a cluster's daemon is judged by its heartbeats)."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

LOCKS_DIR = "recrawl"  # under DAGSTER_HOME, beside Dagster's own folders
DAEMON_LOCK = "daemon.lock"
COMMANDS_DIR = "commands"
SERVING, STOPPING = "serving", "stopping"
ACQUIRE_WAIT_S = 2.0  # a prober holds a lock for microseconds: a taker tries for this long


class LockHeld(RuntimeError):
    """Another live process holds the lock; `holder` is what it recorded."""

    def __init__(self, path: Path, holder: dict):
        super().__init__(f"{path} is held by pid {holder.get('pid')} ({holder.get('what', 'unknown')})")
        self.path, self.holder = path, holder


@dataclass(frozen=True)
class Probe:
    held: bool  # a live process holds the lock
    record: dict | None  # what its holder wrote (None: no file)


def daemon_lock_path(home: str | os.PathLike) -> Path:
    return Path(home) / LOCKS_DIR / DAEMON_LOCK


def commands_dir(home: str | os.PathLike) -> Path:
    return Path(home) / LOCKS_DIR / COMMANDS_DIR


class HeldLock:
    """A lock file held for a `with` block (and by any child it is passed to: `fd`)."""

    def __init__(self, path: Path, what: str):
        self.path, self.what = path, what
        self.fd: int | None = None

    def __enter__(self) -> "HeldLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + ACQUIRE_WAIT_S
        while not _try_lock(fd, fcntl.LOCK_EX):
            if time.monotonic() > deadline:
                record = _read(fd)
                os.close(fd)
                raise LockHeld(self.path, record or {})
            time.sleep(0.05)
        self.fd = fd
        self.mark(SERVING)
        return self

    def mark(self, state: str) -> None:
        """Record who holds the lock and in what state (called from a signal handler too)."""
        text = json.dumps({"pid": os.getpid(), "started": time.time(), "what": self.what, "state": state})
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, text.encode(), 0)

    def __exit__(self, *exc) -> None:
        self.path.unlink(missing_ok=True)  # a clean end leaves no record: nothing died here
        os.close(self.fd)  # lets go of the lock (a child it was passed to may hold it a little longer)
        self.fd = None


def probe(path: Path) -> Probe:
    """Whether a live process holds the lock at `path`, and what its holder recorded."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return Probe(False, None)
    try:
        free = _try_lock(fd, fcntl.LOCK_SH)  # shared: probers never stop one another
        if free:
            fcntl.flock(fd, fcntl.LOCK_UN)
        return Probe(not free, _read(fd))
    finally:
        os.close(fd)


def wait_released(path: Path, timeout_s: float) -> bool:
    """Wait until nobody holds the lock at `path` (True), or `timeout_s` passed (False)."""
    deadline = time.monotonic() + timeout_s
    while probe(path).held:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def live_commands(home: str | os.PathLike) -> list[dict]:
    """What each live cycle command recorded (pid, what it runs); the lock files of commands
    that died are removed on the way."""
    found = []
    for path in sorted(commands_dir(home).glob("*.lock")):
        state = probe(path)
        if state.held:
            found.append(state.record or {})
        else:
            path.unlink(missing_ok=True)  # its command died without cleaning up: nobody holds it
    return found


def command_lock(home: str | os.PathLike, what: str) -> HeldLock:
    """The lock a cycle command holds for its whole length (live_commands finds it)."""
    return HeldLock(commands_dir(home) / f"{os.getpid()}-{time.time_ns()}.lock", what)


def _try_lock(fd: int, kind: int) -> bool:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _read(fd: int) -> dict | None:
    try:
        data = os.pread(fd, 4096, 0)
        return json.loads(data) if data else {}
    except (OSError, ValueError):
        return {}
