"""The commands as an operator runs them on one DAGSTER_HOME and one data root, in this order
(each test goes on from the state the one before left; the days follow one another):

1. `make ui` in the background (its sensors awake), and a catch-up of three past days with the
   cycle command, one command a day, while the seed files change between them: the seed
   sensor records each change and waits, so every day is crawled and none is refused.
2. `make ui` stopped by SIGTERM: nothing of it left, no live-looking heartbeat.
3. A command right after starts its own `dagster dev`, and Ctrl-C stops it mid-fetch: its runs cancelled, not retried, every process of it gone before
   it exits, and no WARC file growing after.
4. The same day again, killed with its `dagster dev` by SIGKILL mid-fetch (a machine crash),
   and run again at once: it starts its own daemon without waiting, the killed runs are failed,
   and the day ends equal to the same day crawled without interruption from the same start.

Every wait is bounded: a command that hangs fails its test instead of the suite."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from dagster import DagsterEventType, DagsterRunStatus, RunsFilter

from command_support import (
    COMMAND_BOUND_S, STOP_BOUND_S, Crawl, children, finish, free_port, processes_of_home, services_line,
    session_processes, wait_fetching, wait_until_gone, warc_files,
)
from crawl_assets.cli.launcher import daemon_running
from crawl_assets.crawler.settings import PROJECT_ROOT
from crawl_assets.deployment.home_locks import daemon_lock_path
from crawl_assets.storage.layout import url_registry_file, warc_dir
from sensors.seed_changes import seed_fingerprint
from support import DemoWebProcess, assert_warcio_check_passes

CATCH_UP = ["2026-11-20", "2026-11-21", "2026-11-22"]  # past days, one command each
DAY4 = "2026-11-23"  # stopped by Ctrl-C, killed with everything, run again
DELAY_S = 1.0  # twelve pages a host, a second apart: a day's fetch lasts long enough to stop it midway
pytestmark = pytest.mark.timeout(3600)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    with DemoWebProcess(seed=2, hosts=3, pages_per_host=12) as web:
        yield Crawl(tmp_path_factory.mktemp("commands"), web, DELAY_S)


def ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell's `&` does to a background job


@pytest.fixture(scope="module")
def make_ui(crawl):
    """`make ui` in the background, its daemon alive; stopped by the test that checks it stops."""
    port, log = free_port(), crawl.folder / "make_ui.log"
    # The home's SQLite tables created first: opened while `make ui` created them, both did, and
    # the test failed with "table asset_daemon_asset_evaluations already exists".
    instance = crawl.instance()
    with open(log, "wb") as out:
        ui = subprocess.Popen(["make", "ui", f"DAGSTER_HOME={crawl.home}", f"UI_PORT={port}",
                               f"SETTINGS={crawl.settings}"], cwd=PROJECT_ROOT, env=crawl.env, stdout=out,
                              stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=ignore_sigint)
    deadline = time.monotonic() + COMMAND_BOUND_S
    # Its lock says at once that a daemon serves the home; its heartbeats, that the daemon is up.
    while not (daemon_running(instance) and set(instance.get_daemon_heartbeats()) >= set(
            instance.get_required_daemon_types())):
        assert ui.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(1)
    yield ui
    if ui.poll() is None:  # the stopping test failed before it stopped it
        os.killpg(ui.pid, signal.SIGKILL)
    instance.dispose()


def seed_sensor_cursor(instance) -> dict | None:
    states = [s for s in instance.all_instigator_state() if s.instigator_name == "seed_files_changed"]
    cursor = states[0].instigator_data.cursor if states and states[0].instigator_data else None
    if cursor is None:
        return None
    return json.loads(cursor) if cursor.startswith("{") else {"files": cursor}


def wait_for_seed_tick(instance, fingerprint: str) -> dict:
    """The seed sensor's cursor once it has seen the seed files as they are now."""
    deadline = time.monotonic() + COMMAND_BOUND_S
    while (cursor := seed_sensor_cursor(instance)) is None or cursor["files"] != fingerprint:
        assert time.monotonic() < deadline, f"the seed sensor never looked at the changed seed files: {cursor}"
        time.sleep(1)
    return cursor


def test_a_catch_up_by_hand_is_not_overtaken_by_a_seed_change(crawl, make_ui):
    """Three past days, one cycle command each, with `make ui`'s daemon and sensors awake; the
    seed files change between the commands. The sensor once started today's frontier in such a
    gap (no command's run was queued then), and every earlier day after it was refused."""
    instance = crawl.instance()
    wait_for_seed_tick(instance, seed_fingerprint(crawl.seeds))  # its first tick: the files as they are
    seeds = [crawl.web.web.seed_urls()[:2], crawl.web.web.seed_urls()[:3], crawl.web.web.seed_urls()[1:3]]
    for day, day_seeds in zip(CATCH_UP, seeds):
        if day != CATCH_UP[0]:  # between two commands: a change the sensor sees while none runs
            crawl.write_seeds(day_seeds)
            cursor = wait_for_seed_tick(instance, seed_fingerprint(crawl.seeds))
            assert cursor.get("waiting") is True, cursor
        command = crawl.cycle(day, crawl.quick_settings)
        output = finish(command)
        assert command.returncode == 0 and "(the running daemon)" in output, output
        assert (crawl.root / "fetch_log" / f"date={day}").exists()
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert not (crawl.root / "frontier" / f"date={today}").exists()
    assert not instance.get_run_records(RunsFilter(job_name="frontier_job", tags={"dagster/partition": today}))
    # The last change still waits, and says why and what to run.
    crawl.write_seeds(crawl.web.web.seed_urls()[:3])
    assert wait_for_seed_tick(instance, seed_fingerprint(crawl.seeds))["waiting"] is True
    ticks = instance.get_ticks(*next((s.instigator_origin_id, s.selector_id) for s in instance.all_instigator_state()
                                     if s.instigator_name == "seed_files_changed"), limit=1)
    assert "earlier days are being crawled by hand (the last cycle command crawled 2026-11-22" in \
        ticks[0].skip_reason, ticks[0].skip_reason
    instance.dispose()


def test_make_ui_in_the_background_stops_on_sigterm(crawl, make_ui):
    instance = crawl.instance()
    make_ui.send_signal(signal.SIGTERM)  # to make alone, as `kill $!` in a script
    make_ui.wait(timeout=STOP_BOUND_S)
    wait_until_gone(make_ui.pid)  # dagster dev, its webserver, daemon and code servers
    # Its daemon's heartbeats and lock went with it: the next command must not take it for alive.
    assert instance.get_daemon_heartbeats() == {} and not daemon_lock_path(crawl.home).exists()
    assert not daemon_running(instance)
    instance.dispose()
    # The uninterrupted crawl of DAY4 starts from here (test 4 compares with it).
    shutil.copytree(crawl.root, crawl.folder / "before_day4")


def test_a_command_right_after_starts_its_own_daemon_and_ctrl_c_stops_all_it_started(crawl):
    """Run after make ui stopped: the command starts its own dagster dev (the catch-up's commands
    used make ui's daemon, starting a webserver only). Ctrl-C mid-fetch used to print that the runs were terminated while the fetch
    step's retry policy ran the step again a minute later, and the code server and run workers
    went on fetching (with WARC files open) long after the command had exited."""
    instance = crawl.instance()
    before = warc_files(crawl, DAY4)
    cycle = crawl.cycle(DAY4, start_new_session=True)  # its own process group, as a terminal's job
    line, lines = services_line(cycle)
    assert "(dagster dev started for this command)" in line, lines
    (supervisor,) = children(cycle.pid)
    opened = wait_fetching(crawl, DAY4, cycle, before)
    os.killpg(cycle.pid, signal.SIGINT)  # Ctrl-C at the terminal
    output = "".join(lines) + cycle.communicate(timeout=STOP_BOUND_S * 2)[0]
    assert cycle.returncode == 130, output
    # Everything it started is gone before it exited: dagster dev, its code server, run workers.
    assert session_processes(supervisor) == [] and processes_of_home(crawl.home) == []
    sizes = {p: p.stat().st_size for p in opened if p.exists()}
    time.sleep(2)
    assert {p: p.stat().st_size for p in sizes if p.exists()} == sizes  # nothing writes to them any more
    (fetch,) = instance.get_run_records(RunsFilter(job_name="fetch_job", tags={"dagster/partition": f"{DAY4}|s00"}))
    kinds = [e.dagster_event.event_type for e in instance.all_logs(fetch.dagster_run.run_id) if e.dagster_event]
    assert DagsterEventType.STEP_UP_FOR_RETRY not in kinds and kinds.count(DagsterEventType.STEP_START) == 1
    assert fetch.dagster_run.status == DagsterRunStatus.CANCELED
    # ... and it says what it did, once it was done.
    assert "terminated 1 unfinished run(s): their runs are over" in output, output
    assert output.rstrip().endswith("its unfinished runs were terminated, the services it started stopped"), output
    assert instance.get_daemon_heartbeats() == {} and not daemon_lock_path(crawl.home).exists()
    instance.dispose()


# DAY4 crawled without interruption by the same stages in one process, from a copy of the root
# taken before DAY4 began; RECRAWL_SETTINGS (one shard) as the commands' own.
UNINTERRUPTED = """import sys
from dagster import DagsterInstance
from crawl_assets.cli.cycle import run_cycle
from crawl_assets.defs.resources import CrawlSettingsResource
with DagsterInstance.ephemeral() as instance:
    run_cycle(sys.argv[2], instance, CrawlSettingsResource(data_root=sys.argv[1]))
"""


def day_of(root: Path, day: str) -> dict:
    """What a day left, without the moments it ran: its frontier, every fetched URL with its
    answer and record kind, the registry, and the records its WARC files hold."""
    def rows(table: str, columns: list[str]) -> list[tuple]:
        files = sorted((root / table / f"date={day}").glob("shard=*/*.parquet"))
        assert files, (table, day)
        return sorted(tuple(r.values()) for f in files for r in pq.read_table(f, columns=columns).to_pylist())

    captures = sorted((r["url"], r["warc_type"], r["digest"]) for p in sorted(warc_dir(root, day, "s00").glob("*.parquet"))
                      for r in pq.read_table(p, columns=["url", "warc_type", "digest"]).to_pylist())
    return {"frontier": rows("frontier", ["url", "depth", "priority", "etag", "last_modified"]),
            "fetched": rows("fetch_log", ["url", "status", "status_class", "warc_type", "payload_digest"]),
            "registry": sorted(tuple(r.values()) for r in pq.read_table(
                url_registry_file(root, day), columns=["url", "first_seen", "depth"]).to_pylist()),
            "captures": captures}


def test_a_crash_that_kills_everything_is_recovered_by_running_the_command_again_at_once(crawl):
    """SIGKILL of the command and its whole dagster dev mid-fetch, as a machine crash, then the
    same command at once: it used to take the killed daemon (heartbeats under two minutes old)
    for alive, wait 63 s on runs nobody dequeued, and fail."""
    instance = crawl.instance()
    before = warc_files(crawl, DAY4)
    killed = crawl.cycle(DAY4, start_new_session=True)
    assert "(dagster dev started for this command)" in services_line(killed)[0]
    (supervisor,) = children(killed.pid)
    wait_fetching(crawl, DAY4, killed, before)
    os.killpg(killed.pid, signal.SIGKILL)
    os.killpg(supervisor, signal.SIGKILL)  # dagster dev, its webserver, daemon, code server, run workers
    crashed_at = time.monotonic()
    rerun = crawl.cycle(DAY4)
    started_s = time.monotonic() - crashed_at
    killed.wait()
    output = finish(rerun)
    recovered_s = time.monotonic() - crashed_at
    print(f"recovery after a SIGKILL of everything: rerun started {started_s:.2f} s after, day {DAY4} done "
          f"{recovered_s:.1f} s after")
    assert started_s < 1.0
    assert rerun.returncode == 0, output
    assert "(dagster dev started for this command)" in output, output
    assert f"{DAY4} was crawled before: the frontier of {DAY4} is kept as it was" in output, output
    # The killed fetch run was failed by run monitoring as the new daemon started, with why.
    runs = [r.dagster_run for r in instance.get_run_records(RunsFilter(
        job_name="fetch_job", tags={"dagster/partition": f"{DAY4}|s00"}))]
    statuses = [run.status for run in reversed(runs)]  # oldest first: Ctrl-C's, the killed one, the rerun's
    assert statuses == [DagsterRunStatus.CANCELED, DagsterRunStatus.FAILURE, DagsterRunStatus.SUCCESS], statuses
    failure = instance.all_logs(runs[1].run_id, of_type=DagsterEventType.RUN_FAILURE)[0].dagster_event.message
    assert "is gone: it was killed or crashed" in failure, failure
    # The day equals DAY4 crawled without interruption from the same start.
    baseline = crawl.folder / "before_day4"
    uninterrupted = subprocess.run([sys.executable, "-c", UNINTERRUPTED, str(baseline), DAY4], cwd=PROJECT_ROOT,
                                   env=crawl.env, capture_output=True, text=True, timeout=COMMAND_BOUND_S)
    assert uninterrupted.returncode == 0, uninterrupted.stdout[-3000:] + uninterrupted.stderr[-3000:]
    assert day_of(crawl.root, DAY4) == day_of(baseline, DAY4)
    warcs = sorted(warc_dir(crawl.root, DAY4, "s00").glob("*.warc.gz"))
    assert warcs and not list(warc_dir(crawl.root, DAY4, "s00").rglob("*.open"))
    assert_warcio_check_passes(*warcs)
    instance.dispose()
