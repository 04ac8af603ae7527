"""Runs `dagster dev` (or a webserver alone) so that it stops with whoever started it, on
SIGINT and SIGTERM alike, and takes its daemon's heartbeats along when it stops.

    python -m crawl_assets.cli.supervisor COMMAND [ARG ...]

Why a process between the caller and Dagster:
- A shell's `&` starts a job with SIGINT ignored, and Dagster's CLI gives SIGTERM the handler
  SIGINT had: `dagster dev` started in the background ignored both. The child here starts with
  SIGINT at its default, so both stop it.
- Its parent (`make ui`, a cycle command) may die by SIGKILL: the kernel then sends this process
  SIGTERM (PR_SET_PDEATHSIG), which it passes on, so no `dagster dev` outlives its command.
- A stopped daemon's heartbeats would read as a live daemon to the next command on the same
  DAGSTER_HOME (launcher.daemon_running): they are removed once the daemon has stopped.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """This process gets `sig` when its parent dies (Linux; elsewhere nothing happens)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def stoppable_child() -> None:
    """preexec_fn of a Dagster process: SIGINT at its default even when ignored here (a
    background job), and SIGTERM when the process that started it dies."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
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


def supervise(command: list[str]) -> int:
    started = time.time()
    die_with_parent()
    child = subprocess.Popen(command, preexec_fn=stoppable_child)

    def pass_on(signum, frame) -> None:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)

    for sig in STOP_SIGNALS:
        signal.signal(sig, pass_on)
    # Ctrl-C reaches the whole foreground group, Dagster's processes included: they stop
    # themselves, and this process waits for them.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    status = child.wait()
    home = os.environ.get("DAGSTER_HOME")
    if home and os.path.basename(command[0]) == "dagster" and command[1:2] == ["dev"]:
        wipe_own_heartbeats(home, started)
    return status


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python -m crawl_assets.cli.supervisor COMMAND [ARG ...]")
    sys.exit(supervise(sys.argv[1:]))
