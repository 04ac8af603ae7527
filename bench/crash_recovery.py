"""What each crash of a cycle command leaves, and how long recovery takes (README, Operations).

    .venv/bin/python bench/crash_recovery.py [--hosts 4] [--pages 20] [--delay 0.5]

One shard of a small demo web (its own process, on 127.0.0.1), a data root and a DAGSTER_HOME
of the run's own; `python -m crawl_assets.cli.cycle` started as an operator would, each
scenario on a day of its own, in this order:

  uninterrupted  a day to its end: the reference wall time of a command (dagster dev's start included)
  ctrl_c         Ctrl-C mid-fetch: seconds until the command has exited, every process it started
                 gone; then the day run again (it resumes from the batch's checkpoint)
  kill_command   SIGKILL of the command alone mid-fetch: seconds until every process it started is
                 gone; then the day run again
  kill_all       SIGKILL of the command and its whole dagster dev mid-fetch (a machine crash) and the
                 command run again at once: seconds until its own dagster dev serves, until the
                 killed run is marked failed, and until the day is done
  kill_run       SIGKILL of the fetch run's process alone while its daemon lives (the OOM killer):
                 seconds until run monitoring marks the run failed; the command ends partial, and
                 `--shards s00` completes the day

Printed per scenario: what it left (runs and their statuses, stray processes, open WARC files)
and the times. The last line:
    crash_recovery uninterrupted_s= ctrl_c_exit_s= kill_command_gone_s= kill_all_serving_s=
    kill_all_run_failed_s= kill_all_day_done_s= kill_run_failed_s= stray_processes= load= load_max= kill_all_load=
(load: the machine's 1-minute load average sampled every 5 s over the whole run, its mean and
maximum; kill_all_load: the samples from the crash to the day's end. On a shared machine the
times are only as good as the cores the commands got.)
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
TESTS = BENCH_DIR.parent / "tests"
sys.path[:0] = [str(BENCH_DIR.parent), str(TESTS), str(TESTS / "cli")]

from dagster import DagsterRunStatus, RunsFilter  # noqa: E402

from command_support import (  # noqa: E402
    Crawl, children, processes_of_home, services_line, session_processes, wait_fetching, warc_files,
)
from support import DemoWebProcess  # noqa: E402

DAYS = ["2026-11-20", "2026-11-21", "2026-11-22", "2026-11-23", "2026-11-24"]
BOUND_S = 900


class LoadSamples:
    """The 1-minute load average every `every_s` seconds, in a thread, until stopped."""

    def __init__(self, every_s: float = 5.0):
        self.samples: list[tuple[float, float]] = []  # (monotonic time, load)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.sample, args=(every_s,), daemon=True)
        self.thread.start()

    def sample(self, every_s: float) -> None:
        while not self.stopped.is_set():
            self.samples.append((time.monotonic(), os.getloadavg()[0]))
            self.stopped.wait(every_s)

    def between(self, start: float, end: float = float("inf")) -> list[float]:
        return [load for at, load in self.samples if start <= at <= end] or [os.getloadavg()[0]]


def fetch_runs(crawl: Crawl, day: str) -> list:
    """The day's fetch runs, oldest first."""
    with crawl.instance() as instance:
        records = instance.get_run_records(RunsFilter(job_name="fetch_job", tags={"dagster/partition": f"{day}|s00"}))
        return [r.dagster_run for r in reversed(records)]


def until(predicate, bound_s: float = BOUND_S, step_s: float = 0.1) -> float:
    """Seconds until predicate() holds (polled)."""
    began = time.monotonic()
    while not predicate():
        if time.monotonic() - began > bound_s:
            raise TimeoutError(f"not within {bound_s} s")
        time.sleep(step_s)
    return time.monotonic() - began


def run_day(crawl: Crawl, day: str, *args: str) -> tuple[float, str, int]:
    began = time.monotonic()
    command = crawl.cycle(day, extra=args)
    output, _ = command.communicate(timeout=BOUND_S)
    return time.monotonic() - began, output, command.returncode


def left_behind(crawl: Crawl, day: str) -> str:
    runs = ", ".join(f"{r.run_id[:8]} {r.status.value.lower()}" for r in fetch_runs(crawl, day))
    stray = processes_of_home(crawl.home)
    open_files = sorted(p.name for p in (crawl.root / "warc" / f"date={day}").rglob("*.open"))
    return f"fetch runs: {runs}; processes left: {len(stray)}; open WARC files: {len(open_files)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--delay", type=float, default=0.5)
    args = parser.parse_args(argv)
    load = LoadSamples()
    figures: dict[str, float] = {}
    stray_total = 0
    with DemoWebProcess(seed=3, hosts=args.hosts, pages_per_host=args.pages) as web:
        folder = Path(tempfile.mkdtemp(prefix="crash-recovery-"))
        crawl = Crawl(folder, web, args.delay, pages_per_host=args.pages)
        crawl.write_seeds(web.web.seed_urls())
        crawl.env.pop("RECRAWL_SENSOR_INTERVAL_S", None)

        wall, output, status = run_day(crawl, DAYS[0])
        assert status == 0, output[-3000:]
        figures["uninterrupted_s"] = wall
        print(f"uninterrupted {DAYS[0]}: {wall:.1f} s")

        day = DAYS[1]  # Ctrl-C
        before = warc_files(crawl, day)
        command = crawl.cycle(day, start_new_session=True)
        services_line(command)
        (supervisor,) = children(command.pid)
        wait_fetching(crawl, day, command, before)
        stopped_at = time.monotonic()
        os.killpg(command.pid, signal.SIGINT)
        command.communicate(timeout=BOUND_S)
        figures["ctrl_c_exit_s"] = time.monotonic() - stopped_at
        stray = session_processes(supervisor) + processes_of_home(crawl.home)
        stray_total += len(stray)
        print(f"ctrl_c {day}: exited {figures['ctrl_c_exit_s']:.1f} s after Ctrl-C (status {command.returncode}); "
              f"{left_behind(crawl, day)}")
        wall, output, status = run_day(crawl, day)
        print(f"  run again: {wall:.1f} s, status {status}")

        day = DAYS[2]  # SIGKILL of the command alone
        before = warc_files(crawl, day)
        command = crawl.cycle(day, start_new_session=True)
        services_line(command)
        (supervisor,) = children(command.pid)
        wait_fetching(crawl, day, command, before)
        command.send_signal(signal.SIGKILL)
        command.wait()
        figures["kill_command_gone_s"] = until(lambda: not session_processes(supervisor)
                                               and not processes_of_home(crawl.home))
        print(f"kill_command {day}: everything it started gone {figures['kill_command_gone_s']:.1f} s after; "
              f"{left_behind(crawl, day)}")
        wall, output, status = run_day(crawl, day)
        print(f"  run again: {wall:.1f} s, status {status}; {left_behind(crawl, day)}")

        day = DAYS[3]  # SIGKILL of everything, run again at once
        before = warc_files(crawl, day)
        command = crawl.cycle(day, start_new_session=True)
        services_line(command)
        (supervisor,) = children(command.pid)
        wait_fetching(crawl, day, command, before)
        killed_run = fetch_runs(crawl, day)[-1].run_id
        os.killpg(command.pid, signal.SIGKILL)
        os.killpg(supervisor, signal.SIGKILL)
        crashed_at = time.monotonic()
        rerun = crawl.cycle(day)
        command.wait()
        print(f"kill_all {day}: left {left_behind(crawl, day)}")
        services_line(rerun)
        figures["kill_all_serving_s"] = time.monotonic() - crashed_at
        with crawl.instance() as instance:
            until(lambda: instance.get_run_by_id(killed_run).status == DagsterRunStatus.FAILURE)
        figures["kill_all_run_failed_s"] = time.monotonic() - crashed_at
        output, _ = rerun.communicate(timeout=BOUND_S)
        figures["kill_all_day_done_s"] = time.monotonic() - crashed_at
        kill_all_loads = load.between(crashed_at)
        assert rerun.returncode == 0, output[-3000:]
        print(f"  run again at once: its dagster dev served {figures['kill_all_serving_s']:.1f} s after the crash, "
              f"the killed run failed at {figures['kill_all_run_failed_s']:.1f} s, the day done at "
              f"{figures['kill_all_day_done_s']:.1f} s; {left_behind(crawl, day)}")

        day = DAYS[4]  # SIGKILL of the run's process alone
        before = warc_files(crawl, day)
        command = crawl.cycle(day)
        services_line(command)
        wait_fetching(crawl, day, command, before)
        run = fetch_runs(crawl, day)[-1]
        with crawl.instance() as instance:
            pid, _ = instance.run_launcher.run_process(run.run_id)  # LocalRunLauncher (dagster.yaml)
            os.kill(pid, signal.SIGKILL)
            killed_at = time.monotonic()
            until(lambda: instance.get_run_by_id(run.run_id).status == DagsterRunStatus.FAILURE)
        figures["kill_run_failed_s"] = time.monotonic() - killed_at
        output, _ = command.communicate(timeout=BOUND_S)
        print(f"kill_run {day}: run {run.run_id[:8]} (pid {pid}) failed {figures['kill_run_failed_s']:.1f} s after "
              f"its process was killed; the command ended with status {command.returncode}")
        wall, output, status = run_day(crawl, day, "--shards", "s00")
        print(f"  --shards s00: {wall:.1f} s, status {status}; {left_behind(crawl, day)}")
        stray_total += len(processes_of_home(crawl.home))
    load.stopped.set()
    loads = load.between(float("-inf"))
    fields = " ".join(f"{k}={v:.1f}" for k, v in figures.items())
    print(f"load average over the run: mean {sum(loads) / len(loads):.1f}, max {max(loads):.1f} "
          f"({len(loads)} samples), on {os.cpu_count()} cores")
    print(f"crash_recovery {fields} stray_processes={stray_total} load={sum(loads) / len(loads):.1f} "
          f"load_max={max(loads):.1f} kill_all_load={sum(kill_all_loads) / len(kill_all_loads):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
