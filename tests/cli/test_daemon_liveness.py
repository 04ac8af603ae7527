"""Whether a daemon serves DAGSTER_HOME, judged from the instance itself: a stopped daemon's
heartbeats never count as a live daemon, and runs left queued with no daemon fail the command."""

import shutil
import time
from types import SimpleNamespace

import pytest
import yaml
from dagster import DagsterInstance
from dagster._daemon.types import DaemonHeartbeat  # the record the daemon writes
from dagster._utils.error import SerializableErrorInfo

from crawl_assets.cli import launcher
from crawl_assets.cli.launcher import LIVE_HEARTBEAT_S, DaemonWatch, LaunchError, daemon_running, open_instance
from crawl_assets.cli.supervisor import wipe_own_heartbeats
from crawl_assets.crawler.settings import PROJECT_ROOT


@pytest.fixture(scope="module")
def module_instance(tmp_path_factory) -> DagsterInstance:
    home = tmp_path_factory.mktemp("dagster_home")
    shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    instance = open_instance(home)  # seconds: it creates the SQLite storage
    yield instance
    instance.dispose()


@pytest.fixture
def instance(module_instance) -> DagsterInstance:
    module_instance.wipe_daemon_heartbeats()
    return module_instance


def beat(instance: DagsterInstance, at: float, daemon_id: str = "ours", errors=()) -> None:
    for kind in instance.get_required_daemon_types():
        instance.add_daemon_heartbeat(DaemonHeartbeat(at, kind, daemon_id, list(errors)))


def test_heartbeats_of_a_stopped_daemon_are_not_a_live_daemon(instance):
    assert not daemon_running(instance)  # none ever wrote
    beat(instance, time.time() - 5)
    assert daemon_running(instance)
    # Stopped two minutes ago: Dagster's own judgement (1,800 s) still called it healthy.
    beat(instance, time.time() - LIVE_HEARTBEAT_S - 1)
    assert not daemon_running(instance)
    # A live daemon that reports an error is still a daemon: a second one would dequeue twice.
    beat(instance, time.time(), errors=[SerializableErrorInfo("sensor failed", [], "Exception")])
    assert daemon_running(instance)


def test_runs_queued_with_no_daemon_fail_with_a_sentence_naming_the_home(instance):
    watch = DaemonWatch(instance, wait_s=0.4)
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:  # within the wait, nothing is said
        watch.check(["frontier_job[2026-11-20]"])
        time.sleep(0.05)
    with pytest.raises(LaunchError) as failure:
        for _ in range(40):
            watch.check(["frontier_job[2026-11-20]"])
            time.sleep(0.05)
    message = str(failure.value)
    assert message.startswith("frontier_job[2026-11-20] stayed queued "), message
    assert f"DAGSTER_HOME={instance.root_directory}" in message and "dagster-daemon run" in message
    assert "\n" not in message


def test_queued_runs_a_live_daemon_serves_wait_as_long_as_they_need(instance):
    watch = DaemonWatch(instance, wait_s=0.2)
    beat(instance, time.time())
    for _ in range(10):  # a run held by its shard's limit stays queued; the daemon is alive
        watch.check(["fetch_job[2026-11-20|s00]"])
        time.sleep(0.05)
    watch_idle = DaemonWatch(instance, wait_s=0.0)
    watch_idle.check([])  # nothing queued: no daemon needed


def test_a_stopping_daemon_removes_its_own_heartbeats_only(instance):
    started = time.time()
    beat(instance, started, daemon_id="ours")  # written the instant it started: its own
    assert wipe_own_heartbeats(instance.root_directory, started)
    assert instance.get_daemon_heartbeats() == {}
    # Another daemon wrote since (two on one instance): its heartbeats are left alone.
    beat(instance, started + 1, daemon_id="ours")
    beat(instance, started + 2, daemon_id="theirs")
    instance.add_daemon_heartbeat(DaemonHeartbeat(started + 3, instance.get_required_daemon_types()[0], "ours", []))
    assert not wipe_own_heartbeats(instance.root_directory, started)
    assert instance.get_daemon_heartbeats()


def test_a_daemon_silent_for_two_minutes_is_dead_one_late_by_three_heartbeats_is_not(instance):
    """Dagster's daemons write every 30 s: a machine busy enough to delay three of those is
    still served; a daemon that wrote nothing for two minutes is gone (its command was killed)."""
    written = time.time()
    beat(instance, written)
    assert daemon_running(instance, now=written + 90)
    assert daemon_running(instance, now=written + 119)
    assert not daemon_running(instance, now=written + 120)
    assert not daemon_running(instance, now=written + 600)


def test_one_daemon_type_gone_quiet_is_no_live_daemon(instance):
    """Each daemon the instance needs (scheduler, sensors, run queue, monitoring...) must have
    written lately: one thread stuck or dead leaves runs unserved though the others write on."""
    now = time.time()
    required = instance.get_required_daemon_types()
    assert len(required) > 1
    for stale in required:
        instance.wipe_daemon_heartbeats()
        for kind in required:
            at = now - 300 if kind == stale else now - 1
            instance.add_daemon_heartbeat(DaemonHeartbeat(at, kind, "ours", []))
        assert not daemon_running(instance, now=now), stale
    instance.wipe_daemon_heartbeats()
    for kind in required[1:]:  # one type never wrote at all
        instance.add_daemon_heartbeat(DaemonHeartbeat(now, kind, "ours", []))
    assert not daemon_running(instance, now=now)


def test_a_daemon_that_died_before_writing_leaves_another_daemons_heartbeats(instance):
    """Our `dagster dev` stopped before its daemon wrote a heartbeat: the heartbeats there are
    another daemon's, written before ours started, and it may be alive: they stay."""
    started = time.time()
    beat(instance, started - 10, daemon_id="theirs")
    assert not wipe_own_heartbeats(instance.root_directory, started)
    assert {beat.daemon_id for beat in instance.get_daemon_heartbeats().values()} == {"theirs"}
    assert daemon_running(instance, now=started + 1)


class Clock:
    """launcher's `time` for DaemonWatch: a monotonic clock the test moves."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def watch_on(monkeypatch, wait_s: float, alive_at: set[float] = frozenset()):
    """A DaemonWatch on a clock the test moves, its daemon alive at the times in `alive_at`;
    also returns the times it looked."""
    clock, looks = Clock(), []

    def alive(instance) -> bool:
        looks.append(clock.now)
        return clock.now in alive_at

    monkeypatch.setattr(launcher, "time", clock)
    monkeypatch.setattr(launcher, "daemon_running", alive)
    home = SimpleNamespace(root_directory="/srv/dagster_home")
    return DaemonWatch(home, wait_s=wait_s), clock, looks


def test_the_watch_looks_every_quarter_of_its_wait_and_every_5_s_at_most(monkeypatch):
    for wait_s, every_s in ((8.0, 2.0), (60.0, 5.0)):
        watch, clock, looks = watch_on(monkeypatch, wait_s)
        for clock.now in (0.0, every_s - 0.1, every_s, 2 * every_s - 0.1):
            watch.check(["frontier_job[2026-11-20]"])
        assert looks == [0.0, every_s], (wait_s, looks)


def test_runs_queued_the_whole_wait_with_no_daemon_fail_the_command_in_one_sentence(monkeypatch):
    watch, clock, looks = watch_on(monkeypatch, wait_s=8.0)
    queued = ["frontier_job[2026-11-20]", "fetch_job[2026-11-20|s01]"]
    for clock.now in (0.0, 2.0, 4.0, 6.0):
        watch.check(queued)
    clock.now = 8.0  # unserved for exactly the wait
    with pytest.raises(LaunchError) as failure:
        watch.check(queued)
    assert str(failure.value) == (
        "frontier_job[2026-11-20], fetch_job[2026-11-20|s01] stayed queued 8 s with no Dagster daemon alive "
        "for DAGSTER_HOME=/srv/dagster_home: start one (`make ui`, or `DAGSTER_HOME=/srv/dagster_home "
        "dagster-daemon run`) or run this command again, which starts its own")


def test_the_wait_starts_again_after_an_empty_queue_or_a_live_daemon(monkeypatch):
    watch, clock, looks = watch_on(monkeypatch, wait_s=8.0, alive_at={11.0})
    queued = ["fetch_job[2026-11-20|s00]"]
    watch.check(queued)  # unserved since 0
    clock.now = 6.0
    watch.check([])  # nothing queued: no daemon needed
    for clock.now in (7.0, 9.0, 11.0, 13.0, 15.0, 17.0, 19.0):  # unserved since 7; the daemon seen at 11
        watch.check(queued)
    assert looks == [0.0, 7.0, 9.0, 11.0, 13.0, 15.0, 17.0, 19.0]
    clock.now = 21.0  # unserved since 13: 8 s
    with pytest.raises(LaunchError, match="stayed queued 8 s"):
        watch.check(queued)


def test_an_instance_without_one_run_per_shard_is_refused_with_a_sentence(tmp_path):
    """The run queue must hold one run per shard (dagster.yaml): a limit of two on the shard
    tag, or a limit of one on another tag, is refused before any run is submitted."""
    for name, limits in (("two", [{"key": "dagster/partition/shard", "limit": 2}]),
                         ("other", [{"key": "dagster/partition/date", "limit": 1}])):
        home = tmp_path / name
        home.mkdir()
        (home / "dagster.yaml").write_text(yaml.safe_dump({"concurrency": {"runs": {"tag_concurrency_limits": limits}}}))
        with pytest.raises(LaunchError) as refusal:
            open_instance(home)
        assert str(refusal.value) == (f"{home / 'dagster.yaml'} does not limit runs to one per dagster/partition/shard: "
                                      f"copy {PROJECT_ROOT / 'dagster.yaml'} there (make setup does)"), name


HOLDER = """import sys, time
from crawl_assets.deployment.home_locks import HeldLock, daemon_lock_path
with HeldLock(daemon_lock_path(sys.argv[1]), "dagster dev"):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_supervised_daemon_killed_by_sigkill_is_known_dead_at_once(instance):
    """The supervisor of a dagster dev holds the home's daemon lock: while it lives the daemon
    serves, heartbeats or not; the moment it is SIGKILLed (a crash), the daemon is dead though
    its heartbeats are seconds old (they counted as alive for two minutes), and the next command
    clears them and starts its own without waiting."""
    import signal
    import subprocess
    import sys

    from crawl_assets.cli.launcher import make_way_for_a_daemon
    from crawl_assets.deployment.home_locks import daemon_lock_path, probe

    home = instance.root_directory
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, home], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        assert daemon_running(instance)  # no heartbeat written yet: the lock says it serves
        beat(instance, time.time())
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    finally:
        holder.kill()
    state = probe(daemon_lock_path(home))
    assert not state.held and state.record["what"] == "dagster dev"  # the record of a daemon that died
    assert not daemon_running(instance)  # at once, with heartbeats a second old
    with pytest.raises(LaunchError) as refusal:  # at once, not after 60 s
        DaemonWatch(instance, wait_s=60).check(["fetch_job[2026-11-20|s00]", "fetch_job[2026-11-20|s01]"])
    assert str(refusal.value) == (
        f"fetch_job[2026-11-20|s00], fetch_job[2026-11-20|s01] will not be dequeued: the daemon serving "
        f"DAGSTER_HOME={home} (pid {holder.pid}, dagster dev) died; run this command again, which starts its own")
    make_way_for_a_daemon(instance)
    assert instance.get_daemon_heartbeats() == {} and probe(daemon_lock_path(home)).record is None
    beat(instance, time.time())  # a daemon started by hand (no lock): its heartbeats judge it
    assert daemon_running(instance)


def test_a_daemon_that_is_stopping_is_not_served_by_and_is_waited_for(instance):
    from crawl_assets.deployment.home_locks import STOPPING, HeldLock, daemon_lock_path, wait_released

    path = daemon_lock_path(instance.root_directory)
    with HeldLock(path, "dagster dev") as lock:
        beat(instance, time.time())
        assert daemon_running(instance)
        lock.mark(STOPPING)  # the supervisor got SIGTERM: its dagster dev is winding down
        assert not daemon_running(instance)
        assert not wait_released(path, 0.3)
    assert wait_released(path, 0.3) and not path.exists()
