"""supervise() (crawl_assets/cli/supervisor.py) run in a process forked from the test's, with a
stand-in command: what reaches the child and when, the stop signals passed on, the exit status
handed back, and the daemon lock a `dagster dev` runs under. (tests/cli/test_supervisor.py runs
the module as a command; a forked supervisor lets a test choose the signal state it starts in,
as a terminal's background job or a blocked thread would give it.)

The supervisor changes its own process for good (its signal handlers, a child subreaper, a
parent-death signal), so it never runs in the test's process: each test forks one, which writes
what supervise() returned (or raised) to a file and exits."""

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster import DagsterInstance
from dagster._daemon.types import DaemonHeartbeat  # the record the daemon writes

from crawl_assets.cli.supervisor import PR_SET_CHILD_SUBREAPER, end_stragglers, supervise
from crawl_assets.crawler.settings import PROJECT_ROOT
from crawl_assets.deployment.home_locks import HeldLock, daemon_lock_path, probe

BOUND_S = 20  # for anything the supervisor or its child does at once (a loaded 2-core machine)
SLEEP = ["sleep", "60"]  # a child that does nothing until it is stopped (longer than any bound)
# A stand-in for `dagster dev` (its name and first argument make the supervisor take the lock):
# once ready to be stopped it says it started, then waits (60 s at most); SIGTERM has it write
# the daemon lock's record as it finds it, wait for $GO if the test set one (30 s at most), and
# exit 0. Any other first argument: it says it started and exits 7.
FAKE_DAGSTER = """#!/bin/sh
[ "$1" = dev ] || { touch "$STARTED"; exit 7; }
trap 'cat "$LOCK" > "$SEEN"; i=0; while [ -n "$GO" ] && [ ! -e "$GO" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; exit 0' TERM
touch "$STARTED"
i=0
while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
"""


def state_of(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def alive(pid: int) -> bool:
    return state_of(pid) not in (None, "Z", "X")


def children_of(pid: int) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
            found.append(int(entry))
    return found


def signal_set(pid: int, field: str) -> set[int]:
    """The signals of /proc/PID/status's SigBlk, SigIgn or SigCgt mask."""
    line = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith(field + ":"))
    mask = int(line.split()[1], 16)
    return {number for number in range(1, 65) if mask >> (number - 1) & 1}


def wait_for(condition, what: str):
    deadline = time.monotonic() + BOUND_S
    while not (found := condition()):
        assert time.monotonic() < deadline, what
        time.sleep(0.02)
    return found


@dataclass
class Forked:
    """A forked process running supervise(command); `out` holds what it returned."""
    pid: int
    out: Path
    err: Path
    go: int | None  # write end of the pipe it waits on before supervise() (stop_first)
    seen: list[int] = dataclasses.field(default_factory=list)  # its children found (killed after the test)

    def child(self) -> int:
        """The command's process, once it has exec'd (its own program, not a copy of the test's)."""
        def started():
            for pid in children_of(self.pid):
                try:
                    if not Path(f"/proc/{pid}/exe").resolve().samefile(sys.executable):
                        return pid
                except OSError:
                    continue
            return None
        found = wait_for(started, "the supervisor's child never started")
        self.seen.append(found)
        return found

    def result(self, bound_s: float = BOUND_S) -> str:
        """What supervise() returned (repr) or raised, once the process has exited."""
        deadline = time.monotonic() + bound_s
        while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
            assert time.monotonic() < deadline, "the supervisor did not return"
            time.sleep(0.02)
        return self.out.read_text()

    def release(self) -> None:
        os.write(self.go, b"x")


@pytest.fixture
def forked(tmp_path):
    """Starts supervise() in forked processes; whatever is left of them is SIGKILLed after."""
    started: list[Forked] = []

    def start(command: list[str], home: Path | None = None, *, blocked=(), ignore_sigint=False,
              stop_first=False, env=None) -> Forked:
        n = len(started)
        out, err = tmp_path / f"supervise{n}.out", tmp_path / f"supervise{n}.err"
        read_go, write_go = os.pipe() if stop_first else (None, None)
        pid = os.fork()
        if pid == 0:  # the supervisor: never back into pytest
            result = "exited without a result"
            try:
                os.setsid()  # a session of its own, as `make ui` started in another terminal
                sys.stderr = open(err, "w", buffering=1)
                os.environ.pop("DAGSTER_HOME", None)
                os.environ.update({"DAGSTER_HOME": str(home)} if home else {})
                os.environ.update(env or {})
                if ignore_sigint:
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.pthread_sigmask(signal.SIG_BLOCK, set(blocked))
                if stop_first:
                    os.read(read_go, 1)
                result = repr(supervise(command))
            except BaseException as exc:  # noqa: BLE001 - the test reads it
                result = f"raised {exc!r}"
            finally:
                Path(out).write_text(result)
                os._exit(0)
        forked = Forked(pid, out, err, write_go)
        started.append(forked)
        return forked

    yield start
    for each in started:  # (a child the supervisor left, once killed, is no longer its child)
        for pid in [*each.seen, *children_of(each.pid), each.pid]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(each.pid, 0)
        except ChildProcessError:
            pass


@pytest.fixture
def fake_dagster(tmp_path) -> tuple[Path, dict]:
    """The stand-in `dagster` and the environment it reads."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "dagster"
    script.write_text(FAKE_DAGSTER)
    script.chmod(0o755)
    env = {"STARTED": str(tmp_path / "started"), "SEEN": str(tmp_path / "seen.json")}
    return script, env


@pytest.fixture
def home(tmp_path) -> Path:
    folder = tmp_path / "dagster_home"
    folder.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster.yaml", folder / "dagster.yaml")
    return folder


# A straggler: it says it is ready to be stopped, then lives 10 s; SIGTERM has it write a
# line and stop 0.4 s later (a run worker recording its run as failed).
STRAGGLER = """trap 'echo TERM >> "$TERMS"; i=240' TERM
touch "$READY"
i=0
while [ $i -lt 250 ]; do sleep 0.04; i=$((i+1)); done
"""


def test_the_childs_status_is_returned_and_what_it_left_running_is_sent_sigterm_once(forked, tmp_path):
    """A process the child left running (a code server left by dagster dev) becomes the
    supervisor's child, as its subreaper, and is stopped before supervise() returns: SIGTERM
    once, then the time it takes to stop. Its name here holds a ")" and spaces: a process's
    /proc stat line is read from its name's last ")"."""
    (tmp_path / "straggler.sh").write_text(STRAGGLER)
    odd = tmp_path / "sh) 1 x"
    odd.symlink_to(shutil.which("sh"))
    env = {"TERMS": str(tmp_path / "terms"), "READY": str(tmp_path / "ready"), "ODD": str(odd),
           "SCRIPT": str(tmp_path / "straggler.sh"), "PID_FILE": str(tmp_path / "straggler.pid")}
    run = forked(["sh", "-c", '"$ODD" "$SCRIPT" & echo $! > "$PID_FILE"; '
                              'while [ ! -e "$READY" ]; do sleep 0.02; done; exit 3'], env=env)
    assert run.result() == "3"
    straggler = int((tmp_path / "straggler.pid").read_text())
    assert not alive(straggler)
    assert (tmp_path / "terms").read_text() == "TERM\n"


def test_the_child_starts_with_sigint_at_its_default_and_unblocked_whatever_the_supervisor_inherited(forked):
    """Started as a terminal's background job (SIGINT ignored) from a thread that blocks the
    signals: the supervisor unblocks its stop signals and answers them, and its child starts
    with SIGINT at its default (Ctrl-C and a SIGINT stop dagster dev) and none of them blocked."""
    three = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    run = forked(SLEEP, blocked=three, ignore_sigint=True)
    child = run.child()
    assert signal_set(child, "SigIgn").isdisjoint(three) and signal_set(child, "SigBlk").isdisjoint(three)
    os.kill(run.pid, signal.SIGTERM)
    assert run.result() == repr(-signal.SIGTERM)  # the child died of the SIGTERM passed on
    assert not alive(child)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_is_passed_on_as_sigterm_and_a_sigint_is_left_to_the_child(forked, stop):
    """SIGINT (Ctrl-C reaches the whole foreground group, the child included) does not stop the
    supervisor: it waits for its child. SIGTERM and SIGHUP stop the child with SIGTERM."""
    run = forked(SLEEP)
    child = run.child()
    os.kill(run.pid, signal.SIGINT)  # the supervisor's alone: nothing stops
    time.sleep(0.3)
    assert alive(run.pid) and alive(child)
    os.kill(run.pid, stop)
    assert run.result() == repr(-signal.SIGTERM)
    assert not alive(child)


def test_a_stop_asked_before_the_child_started_stops_it_as_soon_as_it_has(forked):
    """SIGTERM pending when supervise() begins (blocked until it unblocks it, as it would be
    if it came while the child was being started): the child is sent SIGTERM once started."""
    run = forked(SLEEP, blocked={signal.SIGTERM}, stop_first=True)
    wait_for(lambda: signal.SIGTERM in signal_set(run.pid, "SigBlk"), "SIGTERM never blocked")
    os.kill(run.pid, signal.SIGTERM)
    wait_for(lambda: signal.SIGTERM in signal_set(run.pid, "SigPnd") | signal_set(run.pid, "ShdPnd"),
             "the SIGTERM is not pending")
    run.release()
    assert run.result() == repr(-signal.SIGTERM)


def test_a_supervisor_whose_parent_dies_stops_its_child(tmp_path):
    """Its parent killed (SIGKILL: `make ui`'s make, a cycle command), the kernel sends the
    supervisor SIGTERM, which it passes on: no child outlives the command above it."""
    out, pid_file = tmp_path / "supervise.out", tmp_path / "child.pid"
    parent = os.fork()
    if parent == 0:  # the parent: forks the supervisor, then waits to be killed
        try:
            os.setsid()
            if os.fork() == 0:
                result = "exited without a result"
                try:
                    result = repr(supervise(["sh", "-c", f'echo $$ > "{pid_file}"; exec sleep 60']))
                except BaseException as exc:  # noqa: BLE001
                    result = f"raised {exc!r}"
                finally:
                    out.write_text(result)
                    os._exit(0)
            signal.pause()
        finally:
            os._exit(0)
    child = None
    try:
        child = int(wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), "the child never started"))
        wait_for(lambda: Path(f"/proc/{child}/exe").resolve().name == "sleep", "the child never exec'd sleep")
        os.kill(parent, signal.SIGKILL)
        os.waitpid(parent, 0)
        assert wait_for(lambda: out.exists() and out.read_text(), "the supervisor did not return") == repr(-signal.SIGTERM)
        assert not alive(child)
    finally:
        if child and alive(child):
            os.kill(child, signal.SIGKILL)
        if alive(parent):
            os.kill(parent, signal.SIGKILL)


def beat(instance: DagsterInstance, at: float) -> None:
    for kind in instance.get_required_daemon_types():
        instance.add_daemon_heartbeat(DaemonHeartbeat(at, kind, "ours", []))


def test_dagster_dev_runs_under_the_homes_daemon_lock_marked_stopping_once_asked_to_stop(forked, fake_dagster, home):
    """The lock names the supervisor and what it runs, serving; on SIGTERM it says stopping
    before the child hears of it (a command started meanwhile waits for it); once the child
    has stopped, the daemon's own heartbeats are removed and the lock file with them."""
    script, env = fake_dagster
    run = forked([str(script), "dev", "-w", "workspace.yaml"], home, env=env | {"LOCK": str(daemon_lock_path(home))})
    child = run.child()
    wait_for(Path(env["STARTED"]).exists, "dagster dev never started")
    lock = probe(daemon_lock_path(home))
    assert lock.held and lock.record["pid"] == run.pid
    assert (lock.record["what"], lock.record["state"]) == (f"{script} dev", "serving")
    instance = DagsterInstance.from_config(str(home))
    try:
        beat(instance, time.time())
        os.kill(run.pid, signal.SIGTERM)
        assert run.result() == "0"  # the child's own exit after its stop
        seen = json.loads(Path(env["SEEN"]).read_text())
        assert (seen["pid"], seen["what"], seen["state"]) == (run.pid, f"{script} dev", "stopping")
        assert not alive(child)
        assert not instance.get_daemon_heartbeats()
    finally:
        instance.dispose()
    assert not daemon_lock_path(home).exists()


def test_the_daemon_lock_is_held_by_dagster_dev_too_until_it_has_stopped(forked, fake_dagster, home, tmp_path):
    """The supervisor killed by SIGKILL: its dagster dev, winding down on the parent-death
    SIGTERM, still holds the lock (the next command waits for it); once it has exited the
    lock is free, its record left (a daemon that died without stopping)."""
    script, env = fake_dagster
    go = tmp_path / "go"
    run = forked([str(script), "dev"], home, env=env | {"LOCK": str(daemon_lock_path(home)), "GO": str(go)})
    child = run.child()
    wait_for(Path(env["STARTED"]).exists, "dagster dev never started")
    os.kill(run.pid, signal.SIGKILL)
    os.waitpid(run.pid, 0)
    seen = json.loads(wait_for(lambda: Path(env["SEEN"]).exists() and Path(env["SEEN"]).read_text(), "no SIGTERM"))
    assert seen["state"] == "serving"  # killed: it had no time to say it was stopping
    assert alive(child) and probe(daemon_lock_path(home)).held
    go.touch()
    wait_for(lambda: not alive(child), "the child did not exit")
    lock = probe(daemon_lock_path(home))
    assert not lock.held and lock.record["pid"] == run.pid


def test_a_second_dagster_dev_on_a_served_home_is_refused_with_a_sentence_and_other_commands_run(forked, fake_dagster, home):
    script, env = fake_dagster
    with HeldLock(daemon_lock_path(home), "dagster dev"):
        refused = forked([str(script), "dev"], home, env=env)
        assert refused.result() == "1"
        assert refused.err.read_text() == (
            f"DAGSTER_HOME={home} is already served by a daemon (pid {os.getpid()}: dagster dev): use it, or stop "
            "it first; two daemons on one home would both dequeue runs\n")
        assert not Path(env["STARTED"]).exists()  # never started
        # Not a daemon (another dagster command, or dagster dev's second argument): no lock asked.
        assert forked([str(script), "webserver"], home, env=env).result() == "7"
        assert Path(env["STARTED"]).exists()


def test_dagster_dev_without_a_dagster_home_runs_without_a_lock(forked, fake_dagster, tmp_path):
    script, env = fake_dagster
    run = forked([str(script), "dev"], None, env=env | {"LOCK": "/dev/null"})
    child = run.child()
    wait_for(Path(env["STARTED"]).exists, "dagster dev never started")
    os.kill(run.pid, signal.SIGTERM)
    assert run.result() == "0"
    assert not alive(child)


def test_a_straggler_that_ignores_sigterm_is_killed_after_the_grace_and_every_straggler_is_named(tmp_path):
    """end_stragglers, as supervise() calls it once its child has exited, in a forked subreaper
    with a grace of half a second: a straggler that ignores SIGTERM (a run worker busy in a
    step) is sent SIGKILL once the grace has passed; the pids of all it stopped are returned."""
    out, pids = tmp_path / "ended", tmp_path / "pids"
    reaper = os.fork()
    if reaper == 0:
        result = "exited without a result"
        try:
            os.setsid()
            ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
            subprocess.run(["sh", "-c", f'sh -c \'trap "" TERM; i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\' & '
                                        f'echo $! >> "{pids}"; sleep 60 & echo $! >> "{pids}"'], check=True)
            started = time.monotonic()
            ended = end_stragglers(grace_s=0.5)
            result = repr((ended, time.monotonic() - started >= 0.5))
        except BaseException as exc:  # noqa: BLE001
            result = f"raised {exc!r}"
        finally:
            out.write_text(result)
            os._exit(0)
    try:
        wait_for(lambda: os.waitpid(reaper, os.WNOHANG) != (0, 0), "end_stragglers did not return")
        stubborn, sleeper = map(int, pids.read_text().split())
        assert out.read_text() == repr((sorted([stubborn, sleeper]), True))
        assert not alive(stubborn) and not alive(sleeper)
    finally:
        for pid in [*map(int, pids.read_text().split() if pids.exists() else []), reaper]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
