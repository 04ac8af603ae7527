"""Submit runs to the Dagster instance and follow them, so every run of the crawl goes through
the run queue and its one-run-per-shard limit, and shows in the UI, re-executable from there.

Runs are submitted through the webserver's GraphQL API, the path the UI itself uses, and the
daemon dequeues them. `DagsterService` starts what is missing for the length of one command:
`dagster dev` (webserver and daemon) when no daemon serves this DAGSTER_HOME, a webserver alone
when one does (two daemons on one instance would both dequeue, and the limits would not hold).
Either runs under supervisor.py, so it stops with the command, even one killed by SIGKILL, with
every process it started, and a daemon's heartbeats go when it stops. Whether a daemon serves
the home is known at once from the lock the supervisor holds (deployment/home_locks.py): a
command run right after a crash that killed everything starts its own `dagster dev` without
waiting, and that daemon's run monitoring marks the killed runs failed as it starts. A run left
queued with no daemon alive fails the command (DaemonWatch) instead of waiting forever.

A run launched through GraphQL with only the `dagster/partition` tag gets no dimension tags,
and the limit in dagster.yaml is keyed on one: `partition_tags` (defs/partitions.py) gives every
run the tags the UI and backfills give it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from dagster import DagsterInstance, DagsterRunStatus
from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

from ..crawler.settings import PROJECT_ROOT, SETTINGS_ENV
from ..defs.jobs import SHARD_TAG
from ..defs.run_status import FINISHED
from ..deployment.home_locks import SERVING, daemon_lock_path, pid_alive, probe, wait_released
from . import supervisor

DAGSTER_URL_ENV = "RECRAWL_DAGSTER_URL"  # a running webserver, for runs that launch runs
DEFAULT_HOME = PROJECT_ROOT / "data" / "dagster_home"
INSTANCE_FILE = PROJECT_ROOT / "dagster.yaml"
STARTUP_TIMEOUT_S = 180.0
# dagster dev stops its webserver and daemon in seconds, and kills either after 60 s.
STOP_GRACE_S = 60.0
# Dagster's daemons write a heartbeat every 30 s (dagster._daemon.controller). A daemon is alive
# if each has written within four of those: a busy loaded machine delays one, never four, and
# Dagster's own 1,800 s took a daemon stopped half an hour ago for a live one.
HEARTBEAT_INTERVAL_S = 30.0
LIVE_HEARTBEAT_S = 4 * HEARTBEAT_INTERVAL_S
# How long a run may stay queued while no daemon is alive before the command gives up: longer
# than a daemon that was just started takes to write its first heartbeats.
NO_DAEMON_WAIT_S = 60.0
# How long terminated runs get to stop (their steps interrupted, the runs marked cancelled)
# before the command stops the services it started, and with them whatever is left.
TERMINATE_WAIT_S = 60.0


class LaunchError(RuntimeError):
    """The instance or the webserver cannot take runs; the message says what to do."""


def dagster_home() -> Path:
    """DAGSTER_HOME, or data/dagster_home; holds the project's dagster.yaml (copied if missing)."""
    home = Path(os.environ.get("DAGSTER_HOME") or DEFAULT_HOME).resolve()
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        shutil.copy(INSTANCE_FILE, home / "dagster.yaml")
    return home


def open_instance(home: Path) -> DagsterInstance:
    """The instance in `home`, refused unless its run queue allows one run per shard."""
    instance = DagsterInstance.from_config(str(home))
    limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits or []
    if not any(limit.get("key") == SHARD_TAG and limit.get("limit") == 1 for limit in limits):
        raise LaunchError(f"{home / 'dagster.yaml'} does not limit runs to one per {SHARD_TAG}: "
                          f"copy {INSTANCE_FILE} there (make setup does)")
    return instance


def settings_run_config(env: Mapping[str, str] = os.environ) -> dict:
    """Run config carrying this command's settings files, so a run launched by a daemon started
    elsewhere (with other settings in its environment) still reads the caller's settings."""
    files = [str(Path(p).resolve()) for p in env.get(SETTINGS_ENV, "").split(":") if p]
    return {"resources": {"crawl_settings": {"config": {"settings_files": files}}}} if files else {}


def daemon_running(instance: DagsterInstance, now: float | None = None) -> bool:
    """A daemon serves the instance: the supervisor of a `dagster dev` holds the home's daemon
    lock and serves (known at once, also right after it was killed); where no supervisor ever
    held it (a daemon started by hand), every daemon the instance needs has written a heartbeat
    lately. A heartbeat that reports errors still comes from a live daemon: starting a second
    one would dequeue runs twice."""
    lock = probe(daemon_lock_path(instance.root_directory))
    if lock.record is not None:  # a supervised daemon: serving, stopping, or dead
        record = lock.record
        return lock.held and record.get("state") == SERVING and pid_alive(record.get("pid"))
    now = time.time() if now is None else now
    heartbeats = instance.get_daemon_heartbeats()
    required = instance.get_required_daemon_types()
    return bool(required) and all(kind in heartbeats and now - heartbeats[kind].timestamp < LIVE_HEARTBEAT_S
                                  for kind in required)


class DaemonWatch:
    """Notices queued runs that no daemon will dequeue: `check` raises LaunchError once runs
    have stayed queued for `wait_s` with no live daemon at any look (one every few seconds), and
    at once when the supervised daemon serving the home died (its lock let go, its record left)."""

    def __init__(self, instance: DagsterInstance, wait_s: float = NO_DAEMON_WAIT_S):
        self.instance = instance
        self.wait_s = wait_s
        self.look_every_s = min(5.0, wait_s / 4)
        self.looked_at = float("-inf")
        self.unserved_since: float | None = None

    def check(self, queued: list[str]) -> None:
        now = time.monotonic()
        if not queued:
            self.unserved_since = None
            return
        if now - self.looked_at < self.look_every_s:
            return
        self.looked_at = now
        if daemon_running(self.instance):
            self.unserved_since = None
            return
        self.unserved_since = now if self.unserved_since is None else self.unserved_since
        home = self.instance.root_directory
        if (dead := died_daemon(home)) is not None:
            raise LaunchError(f"{', '.join(queued)} will not be dequeued: the daemon serving DAGSTER_HOME={home} "
                              f"(pid {dead.get('pid')}, {dead.get('what')}) died; run this command again, which "
                              "starts its own")
        if now - self.unserved_since >= self.wait_s:
            raise LaunchError(f"{', '.join(queued)} stayed queued {now - self.unserved_since:.0f} s with no "
                              f"Dagster daemon alive for DAGSTER_HOME={home}: start one (`make ui`, or "
                              f"`DAGSTER_HOME={home} dagster-daemon run`) or run this command again, "
                              "which starts its own")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _graphql_ready(url: str) -> bool:
    """The webserver answers and its code location has loaded."""
    request = urllib.request.Request(
        f"{url}/graphql", data=b'{"query": "{ repositoriesOrError { __typename } }"}',
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return b"RepositoryConnection" in answer.read()
    except (urllib.error.URLError, OSError):
        return False


class DagsterService:
    """`dagster dev` (or a webserver alone, when a daemon already serves the instance) on a free
    loopback port, for the length of a `with` block. Its URL goes to the runs it launches in
    RECRAWL_DAGSTER_URL, so a daily_cycle run can submit the day's runs through it."""

    def __init__(self, home: Path, *, with_daemon: bool | None = None, port: int | None = None,
                 log_file: Path | None = None, env: Mapping[str, str] | None = None):
        self.home = home
        self.env = dict(env or {})
        self.with_daemon = with_daemon
        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_file = log_file or home / "dagster_service.log"
        self._process: subprocess.Popen | None = None
        self._started = 0.0  # when its daemon started: heartbeats since then are its own

    def __enter__(self) -> "DagsterService":
        self._started = time.time()
        instance = open_instance(self.home)
        if self.with_daemon is None:
            self.with_daemon = not daemon_running(instance)
        if self.with_daemon:
            make_way_for_a_daemon(instance)
        bin_dir = Path(sys.executable).parent
        address = ["-h", "127.0.0.1", "-p", str(self.port), "-w", str(PROJECT_ROOT / "workspace.yaml")]
        command = ([str(bin_dir / "dagster"), "dev", *address] if self.with_daemon
                   else [str(bin_dir / "dagster-webserver"), *address])
        env = os.environ | self.env | {"DAGSTER_HOME": str(self.home), DAGSTER_URL_ENV: self.url}
        with open(self.log_file, "ab") as log:
            # Its own process group, so a lingering code server or daemon can be stopped with it.
            self._process = subprocess.Popen([sys.executable, "-m", supervisor.__name__, *command],
                                             cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                             start_new_session=True, preexec_fn=supervisor.stoppable_child)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _graphql_ready(self.url):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise LaunchError(f"{' '.join(command[:2])} did not come up on {self.url}: see {self.log_file}")
            time.sleep(0.5)
        return self

    def __exit__(self, *exc) -> None:
        """The supervisor stops dagster dev and removes its daemon's heartbeats; a group that
        lingers is killed, and the heartbeats removed here."""
        if not self._process or self._process.poll() is not None:
            return
        self._process.send_signal(signal.SIGTERM)
        try:
            self._process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=STOP_GRACE_S)
            if self.with_daemon:
                supervisor.wipe_own_heartbeats(str(self.home), self._started)


def died_daemon(home) -> dict | None:
    """What the supervised daemon that served `home` recorded, if it died without stopping (its
    lock free, its record left: killed); None otherwise."""
    lock = probe(daemon_lock_path(home))
    return lock.record if lock.record is not None and not lock.held else None


def make_way_for_a_daemon(instance: DagsterInstance) -> None:
    """Before this command's `dagster dev` starts: a supervised daemon stopping (or whose
    supervisor was killed while its dagster dev winds down) is waited for, and one that died
    without stopping (killed) leaves a lock record and heartbeats that are removed, so the UI
    and the next command see no dead daemon as alive."""
    path = daemon_lock_path(instance.root_directory)
    if not wait_released(path, STOP_GRACE_S + 10):
        raise LaunchError(f"the daemon serving DAGSTER_HOME={instance.root_directory} ({probe(path).record}) is "
                          f"stopping but did not stop within {STOP_GRACE_S + 10:.0f} s: stop it, then run this again")
    if probe(path).record is not None:
        instance.wipe_daemon_heartbeats()
        path.unlink(missing_ok=True)


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    label: str
    status: DagsterRunStatus
    start_time: float | None
    end_time: float | None

    @property
    def seconds(self) -> float:
        return (self.end_time or 0.0) - (self.start_time or 0.0) if self.start_time else 0.0

    @property
    def succeeded(self) -> bool:
        return self.status == DagsterRunStatus.SUCCESS


@dataclass(frozen=True)
class RunSpec:
    """One run to submit: a job, a partition, and the tags that partition's runs carry."""

    label: str
    job_name: str
    tags: dict[str, str]


class RunQueue:
    """Submits runs through a webserver and follows them in the instance until they finish."""

    def __init__(self, url: str, instance: DagsterInstance, run_config: dict | None = None,
                 extra_tags: Mapping[str, str] | None = None, no_daemon_wait_s: float = NO_DAEMON_WAIT_S):
        host, _, port = url.removeprefix("http://").partition(":")
        self.client = DagsterGraphQLClient(host, port_number=int(port) if port else None)
        self.instance = instance
        self.daemon_watch = DaemonWatch(instance, no_daemon_wait_s)
        self.run_config = run_config or {}
        self.extra_tags = dict(extra_tags or {})

    def submit(self, spec: RunSpec) -> str:
        try:
            return self.client.submit_job_execution(spec.job_name, run_config=self.run_config,
                                                    tags=spec.tags | self.extra_tags)
        except DagsterGraphQLClientError as exc:
            raise LaunchError(f"the webserver refused {spec.label}: {exc}") from exc

    def outcome(self, run_id: str, label: str) -> RunOutcome:
        record = self.instance.get_run_record_by_id(run_id)
        assert record is not None, f"run {run_id} is not in the instance the webserver writes to"
        return RunOutcome(run_id, label, record.dagster_run.status, record.start_time, record.end_time)

    def run_all(self, specs: Iterable[RunSpec], parallel: int,
                progress: Callable[[str], None] = lambda line: None) -> list[RunOutcome]:
        """Submit `specs` keeping at most `parallel` unfinished, follow each to its end, report
        every change of status; on Ctrl-C, or runs queued with no daemon to dequeue them
        (LaunchError), the runs in flight are terminated."""
        assert parallel >= 1, parallel
        waiting, in_flight, done = list(specs), {}, []
        seen_status: dict[str, DagsterRunStatus] = {}
        try:
            while waiting or in_flight:
                while waiting and len(in_flight) < parallel:
                    spec = waiting.pop(0)
                    in_flight[self.submit(spec)] = spec.label
                queued = []
                for run_id, label in list(in_flight.items()):
                    outcome = self.outcome(run_id, label)
                    if outcome.status == DagsterRunStatus.QUEUED:
                        queued.append(label)
                    if seen_status.get(run_id) != outcome.status:
                        seen_status[run_id] = outcome.status
                        timing = f" in {outcome.seconds:.1f} s" if outcome.status in FINISHED else ""
                        progress(f"{label}: {outcome.status.value.lower()}{timing} (run {run_id[:8]})")
                    if outcome.status in FINISHED:
                        done.append(outcome)
                        del in_flight[run_id]
                self.daemon_watch.check(queued)
                time.sleep(0.5)
        except (KeyboardInterrupt, LaunchError):
            if in_flight:
                self.client.terminate_runs(list(in_flight))
                self.wait_finished(list(in_flight), progress)
            raise
        return done

    def wait_finished(self, run_ids: list[str], progress: Callable[[str], None],
                      wait_s: float = TERMINATE_WAIT_S) -> None:
        """After terminating them: wait until the runs are over (cancelled, their processes
        gone), so nothing of theirs is still fetching when the command says they stopped."""
        deadline = time.monotonic() + wait_s
        while (left := [run_id for run_id in run_ids
                        if self.instance.get_run_by_id(run_id).status not in FINISHED]):
            if time.monotonic() > deadline:
                progress(f"terminated {len(run_ids)} unfinished run(s); {len(left)} still stopping after "
                         f"{wait_s:.0f} s, ended with the services: {', '.join(r[:8] for r in left)}")
                return
            time.sleep(0.5)
        progress(f"terminated {len(run_ids)} unfinished run(s): their runs are over")
