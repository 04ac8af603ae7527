"""Runs `dagster dev` (or a webserver alone) so that it stops with whoever started it, on
SIGINT and SIGTERM alike, takes every process it started along, and says at once which
process serves its DAGSTER_HOME.

    python -m crawl_assets.cli.supervisor COMMAND [ARG ...]

Why a process between the caller and Dagster:
- A shell's `&` starts a job with SIGINT ignored, and Dagster's CLI gives SIGTERM the handler
  SIGINT had: `dagster dev` started in the background ignored both. The child here starts with
  SIGINT at its default, so both stop it.
- Its parent (`make ui`, a cycle command) may die by SIGKILL: the kernel then sends this process
  SIGTERM (PR_SET_PDEATHSIG), which it passes on, so no `dagster dev` outlives its command.
- `dagster dev` stops its webserver and daemon but leaves its code server, the code server's
  gRPC server and their run workers running until their runs end: this process is their
  subreaper (PR_SET_CHILD_SUBREAPER), so they become its children when their parents exit,
  and it stops every one of them (SIGTERM: a run worker records its run failed; SIGKILL after
  STRAGGLER_GRACE_S) before it exits itself.
- While it runs `dagster dev` it holds DAGSTER_HOME's daemon lock (deployment/home_locks.py),
  passed to `dagster dev` too: the next command knows at once whether a daemon serves the home,
  is stopping, or died (a killed daemon's heartbeats look alive for two minutes). A stopped
  daemon's heartbeats are removed once it has stopped. A second `dagster dev` on a home already
  served is refused: two daemons would both dequeue, and the run limits would not hold.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

from ..deployment.home_locks import STOPPING, HeldLock, LockHeld, daemon_lock_path

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
# How long leftover processes (a code server, run workers) get to stop on SIGTERM: a run
# worker records its run as failed in that time; then SIGKILL.
STRAGGLER_GRACE_S = 15.0


def _prctl(option: int, value: int) -> None:
    """prctl(2) (Linux; elsewhere nothing happens)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """This process gets `sig` when its parent dies."""
    _prctl(PR_SET_PDEATHSIG, sig)


def stoppable_child() -> None:
    """preexec_fn of a Dagster process: SIGINT at its default even when ignored here (a
    background job) and unblocked, and SIGTERM when the process that started it dies."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, *STOP_SIGNALS})
    die_with_parent()


def wipe_own_heartbeats(home: str, started: float) -> bool:
    """Remove the daemon heartbeats if the only daemon that wrote since `started` was ours
    (a single daemon id); another live daemon's would be taken for ours otherwise."""
    from dagster import DagsterInstance  # only when stopping: it takes a second to import

    instance = DagsterInstance.from_config(home)
    try:
        heartbeats = instance.get_daemon_heartbeats().values()
        writers = {beat.daemon_id for beat in heartbeats if beat.timestamp >= started}
        if len(writers) != 1:
            return False
        instance.wipe_daemon_heartbeats()
        return True
    finally:
        instance.dispose()


def children(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (zombies left for waitpid)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # (Never mutation-tested: a mutant of this test takes every process for a child, and
        # end_stragglers signals them all.)
        if int(fields[1]) == pid and fields[0] not in ("Z", "X"):  # pragma: no mutate
            found.append(int(entry))
    return found


def reap() -> None:
    """Collect every child that has exited (as a subreaper, orphans exit as our children)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def end_stragglers(grace_s: float = STRAGGLER_GRACE_S) -> list[int]:
    """Stop whatever the child left running (orphans handed to this process, and theirs as
    their parents exit): SIGTERM on sight, SIGKILL after `grace_s`; returns their pids."""
    me, signalled, kill_after = os.getpid(), set(), None
    while True:
        reap()
        left = children(me)
        if not left:
            return sorted(signalled)
        kill_after = kill_after or time.monotonic() + grace_s
        late = time.monotonic() >= kill_after
        for pid in left:
            if late or pid not in signalled:
                try:
                    os.kill(pid, signal.SIGKILL if late else signal.SIGTERM)
                except ProcessLookupError:
                    pass
                signalled.add(pid)
        time.sleep(0.2)


def runs_a_daemon(command: list[str]) -> bool:
    return os.path.basename(command[0]) == "dagster" and command[1:2] == ["dev"]


def supervise(command: list[str]) -> int:
    started = time.time()
    die_with_parent()
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    home = os.environ.get("DAGSTER_HOME")
    daemon = bool(home) and runs_a_daemon(command)
    try:
        lock = HeldLock(daemon_lock_path(home), " ".join(command[:2])) if daemon else nullcontext()
        with lock:
            started_child: list[subprocess.Popen] = []
            stop_asked: list[int] = []

            def pass_on(signum, frame) -> None:
                stop_asked.append(signum)
                if daemon:
                    lock.mark(STOPPING)  # a command started now waits for it to let go
                for child in started_child:
                    if child.poll() is None:
                        child.send_signal(signal.SIGTERM)

            # The handlers before the child: a stop that comes as soon as the child has started is
            # not lost (it came before them, and a SIGTERM ignored by whoever started this process
            # was ignored here); the stop signals unblocked, whatever mask this process inherited.
            for sig in STOP_SIGNALS:
                signal.signal(sig, pass_on)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            # Ctrl-C reaches the whole foreground group, Dagster's processes included: they stop
            # themselves, and this process waits for them.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            child = subprocess.Popen(command, preexec_fn=stoppable_child, pass_fds=(lock.fd,) if daemon else ())
            started_child.append(child)
            if stop_asked and child.poll() is None:  # asked to stop while the child was starting
                child.send_signal(signal.SIGTERM)
            status = child.wait()
            end_stragglers()
            if daemon:
                wipe_own_heartbeats(home, started)
    except LockHeld as held:
        print(f"DAGSTER_HOME={home} is already served by a daemon (pid {held.holder.get('pid')}: "
              f"{held.holder.get('what')}): use it, or stop it first; two daemons on one home would both "
              "dequeue runs", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python -m crawl_assets.cli.supervisor COMMAND [ARG ...]")
    sys.exit(supervise(sys.argv[1:]))
