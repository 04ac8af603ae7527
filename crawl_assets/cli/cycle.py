"""Recrawl cycles from the command line, through the run queue. For each day: the seeds and
the day's frontier (frontier_job), the fetch batch of every shard (fetch_job, at most
`max_parallel_shards` submitted at once; dagster.yaml still allows one run per shard), then
everything that reads the fetch batches (day_close_job). Each is a run in the instance, visible
in the UI and re-executable there. Days run one after another, each after the previous closed.

    python -m crawl_assets.cli.cycle [--date YYYY-MM-DD] [--until YYYY-MM-DD] [--shards s00,s01] [--refetch]
                                     [--quarantine WARC_FILE ...]

A daemon must dequeue the runs: when none serves DAGSTER_HOME (data/dagster_home by default),
the command runs `dagster dev` on a free loopback port for its own length (launcher.py).
A shard that still fails after its retries does not stop the day: the day closes on what
landed, its day_report says which shards are missing, each failed run's own sentence is
printed, and the command exits with status 1. Bad seed lines are printed before the runs; the
day is crawled from the other seeds, and the exit status is 1 until they are corrected.

The repairs its messages propose run through it too: a lost or damaged seen-URL filter of the
day before is rebuilt from that day's URL registry first; --quarantine sets a damaged WARC
file aside with its loss recorded (pipeline/archive/warc_quarantine.py), so the day's close passes.
"""

import argparse
import dataclasses
import datetime as dt
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dagster import AssetSelection, DagsterEventType, DagsterInstance, materialize

from ..crawler.crawl_errors import CrawlError, CrawlInputError, print_uncaught_crawl_errors

if __name__ == "__main__":  # the modules below read the settings as they load
    print_uncaught_crawl_errors("cycle")

from ..crawler.settings import CrawlSettings, load_settings
from ..crawler.url_policy.seed_files import read_seeds
from ..defs.assets import ALL_ASSETS
from ..defs.assets.fetch import REFETCH_TAG
from ..defs.assets.frontier import KEPT_METADATA
from ..defs.jobs import (
    CLI_DRIVER,
    DRIVER_TAG,
    FRONTIER_STAGE,
    CLOSE_STAGE,
    FETCH_STAGE,
    SHARD_CLOSE_STAGES,
    day_close_job,
    fetch_job,
    frontier_job,
    seen_filter_job,
)
from ..defs.partitions import DAY_PER_SHARD, SHARD_KEYS, daily_partitions, fetch_partition_key, fetch_partitions, partition_tags
from ..defs.resources import CrawlSettingsResource
from ..defs.run_launcher import PROCESS_GONE
from ..defs.run_status import failed_fetch_runs, landed_shards, no_shard_landed, retry_command
from ..pipeline.day_order import check_in_order, check_seeds_for, previous_day
from ..pipeline.seen_filter_files import seen_filter_lost
from ..pipeline.archive.warc_quarantine import quarantine_warc
from ..deployment.home_locks import command_lock
from .launcher import (
    DagsterService,
    LaunchError,
    RunOutcome,
    RunQueue,
    RunSpec,
    dagster_home,
    open_instance,
    settings_run_config,
)


STOPPED = "cycle stopped by Ctrl-C: its unfinished runs were terminated, the services it started stopped"


class CycleFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class CycleReport:
    date: str
    frontier: RunOutcome
    fetches: tuple[RunOutcome, ...]
    close: RunOutcome
    wall_s: float
    skipped_seed_lines: int = 0  # bad lines of the seed files (printed before the day's runs)

    @property
    def failed_shards(self) -> list[str]:
        """The shard of each failed fetch run, from its label fetch_job[D|s03]."""
        return [run.label.removesuffix("]").rsplit("|", 1)[1] for run in self.fetches if not run.succeeded]

    @property
    def failed(self) -> bool:
        """The command's exit status says so: a person has something to repair."""
        return bool(self.failed_shards or self.skipped_seed_lines)

    def summary(self) -> str:
        longest = max((run.seconds for run in self.fetches), default=0.0)
        total = sum(run.seconds for run in self.fetches)
        failed = [f"{shard} (run {run.run_id[:8]})" for shard, run in
                  zip(self.failed_shards, (run for run in self.fetches if not run.succeeded))]
        partial = (f"; PARTIAL, shards that failed: {', '.join(failed)} (their sentences are above); retry them: "
                   f"{retry_command(self.date, self.failed_shards)}") if failed else ""
        seeds = (f"; {self.skipped_seed_lines} seed line(s) skipped (listed above): correct or remove them "
                 "in the seed files") if self.skipped_seed_lines else ""
        return (f"cycle {self.date}: wall time {self.wall_s:.1f} s over {len(self.fetches)} shards; "
                f"longest shard {longest:.1f} s, all shard runs together {total:.1f} s{partial}{seeds}")


def failure_reason(instance: DagsterInstance, run_id: str) -> str:
    """What made a run fail, in its own words: a blocking check's sentence (defs/checks.py; the
    step's own error only says that a check failed), else a crawl error's sentence
    (defs/assets/failures.py)."""
    checks = [entry.dagster_event.event_specific_data
              for entry in instance.all_logs(run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION)]
    failed = [f"check {c.check_name} failed: {c.description or 'see it in the UI'}"
              for c in checks if not c.passed and c.blocking]
    if failed:
        return "; ".join(failed)
    for entry in instance.all_logs(run_id, of_type=DagsterEventType.STEP_FAILURE):
        failure = entry.dagster_event.step_failure_data
        if failure.user_failure_data and failure.user_failure_data.description:
            return failure.user_failure_data.description
        if failure.error:
            return error_sentence(failure.error)
    # No step failed: the run's process died (run monitoring's words), or it was terminated.
    for entry in instance.all_logs(run_id, of_type={DagsterEventType.RUN_FAILURE, DagsterEventType.RUN_CANCELED}):
        if gone := PROCESS_GONE.search(entry.dagster_event.message or ""):
            return gone.group(0)
        if entry.dagster_event.event_type == DagsterEventType.RUN_CANCELED:
            return "terminated (Ctrl-C of a cycle command, or Terminate in the UI) before it finished"
    return f"see run {run_id} in the UI"


def kept_because(instance: DagsterInstance, run_id: str) -> str | None:
    """Why a frontier run kept its day's frontier (a re-run of a day whose fetch began), in the
    frontier's own sentence, which says how to refetch the day; None when it built one."""
    for entry in instance.all_logs(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION):
        metadata = entry.dagster_event.event_specific_data.materialization.metadata
        if KEPT_METADATA in metadata and metadata[KEPT_METADATA].value:
            return metadata["kept_because"].value
    return None


def error_sentence(error) -> str:
    """A step's error (Dagster's SerializableErrorInfo) as its innermost cause's own words: Dagster wraps an asset's exception in one that names
    only the op ("Error occurred while executing op ..."). A crawl error's message is the whole
    story, so its class name is left out; any other error keeps it (OSError: [Errno 28] ...)."""
    while error.cause is not None:
        error = error.cause
    text = error.message.strip()
    kind, _, sentence = text.partition(": ")
    return sentence if kind.startswith("crawl_assets.") and sentence else text


def daily_spec(job_name: str, date: str, refetch: bool = False) -> RunSpec:
    """refetch (frontier_job): build the frontier of a day whose fetch began again."""
    tags = partition_tags(daily_partitions, date) | ({REFETCH_TAG: "true"} if refetch else {})
    return RunSpec(f"{job_name}[{date}]", job_name, tags)


def fetch_spec(date: str, shard: str, refetch: bool = False, job_name: str = fetch_job.name) -> RunSpec:
    """refetch: fetch a shard that finished before again (else its run changes nothing);
    job_name: another job keyed like the fetch batches."""
    key = str(fetch_partition_key(date, shard))
    tags = partition_tags(fetch_partitions, key) | ({REFETCH_TAG: "true"} if refetch else {})
    return RunSpec(f"{job_name}[{key}]", job_name, tags)  # the job's name, as the UI shows the run


def submit_cycle(date: str, queue: RunQueue, shards: list[str], parallel: int,
                 progress: Callable[[str], None] = lambda line: None, refetch: bool = False,
                 whole_day: bool = True, day_shards: list[str] | None = None) -> CycleReport:
    """Submit one day's runs stage by stage to the run queue and follow them to the end.
    A refetch of the whole day builds its frontier again; of some shards, it keeps it.
    A day none of whose shards (`day_shards`, default `shards`) landed is not closed."""
    started = time.monotonic()
    (frontier,) = queue.run_all([daily_spec(frontier_job.name, date, refetch and whole_day)], 1, progress)
    if not frontier.succeeded:
        raise CycleFailed(f"{frontier.label} failed (run {frontier.run_id}): "
                          f"{failure_reason(queue.instance, frontier.run_id)}")
    if kept := kept_because(queue.instance, frontier.run_id):
        progress(f"{date} was crawled before: {kept}")
    fetches = queue.run_all([fetch_spec(date, shard, refetch) for shard in shards], parallel, progress)
    for fetch in fetches:
        if not fetch.succeeded:
            progress(f"{fetch.label} failed (run {fetch.run_id[:8]}): {failure_reason(queue.instance, fetch.run_id)}")
    # A shard that failed after its retries leaves a partial day: the day still closes, unless
    # nothing landed at all (every shard's latest run failed): then there is nothing to close on.
    every_shard = day_shards or shards
    if not landed_shards(queue.instance, date, every_shard):
        raise CycleFailed(no_shard_landed(date, failed_fetch_runs(queue.instance, date, every_shard)))
    (close,) = queue.run_all([daily_spec(day_close_job.name, date)], 1, progress)
    report = CycleReport(date, frontier, tuple(fetches), close, time.monotonic() - started)
    if not close.succeeded:
        raise CycleFailed(f"{close.label} failed (run {close.run_id}): "
                          f"{failure_reason(queue.instance, close.run_id)}")
    if DAY_PER_SHARD:
        submit_shard_close(date, queue, parallel, progress)
    return report


def submit_shard_close(date: str, queue: RunQueue, parallel: int, progress: Callable[[str], None]) -> None:
    """A day per shard's close stages (jobs.SHARD_CLOSE_STAGES: the seen filters and the
    priorities per shard), stage after stage, every shard of the settings (the plan covers
    every host); a failed run stops the day."""
    for job, per_shard in SHARD_CLOSE_STAGES:
        specs = ([fetch_spec(date, shard, job_name=job.name) for shard in SHARD_KEYS] if per_shard
                 else [daily_spec(job.name, date)])
        for run in queue.run_all(specs, parallel if per_shard else 1, progress):
            if not run.succeeded:
                raise CycleFailed(f"{run.label} failed (run {run.run_id}): {failure_reason(queue.instance, run.run_id)}")


def run_cycle(date: str, instance: DagsterInstance, crawl_settings: CrawlSettingsResource,
              shards: list[str] | None = None, progress: Callable[[str], None] = lambda line: None) -> None:
    """The same stages in this process with materialize(), for tests: it bypasses the run
    queue and its limits, so shards run one after another. Stops at the first failed run."""
    resources = {"crawl_settings": crawl_settings}
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}

    def stage(selection, partition_key) -> None:
        result = materialize(ALL_ASSETS, selection=selection, partition_key=partition_key,
                             instance=instance, resources=resources, run_config=quiet, raise_on_error=False)
        if not result.success:
            errors = [error_sentence(e.step_failure_data.error)
                      for e in result.get_step_failure_events() if e.step_failure_data.error]
            raise CycleFailed(f"run {result.run_id} for {partition_key} failed: {'; '.join(errors)}")
        for event in result.get_asset_materialization_events():
            progress(f"{event.asset_key.to_user_string()} {event.partition or ''}: materialised")
        if kept := kept_because(instance, result.run_id):
            progress(f"{partition_key} was crawled before: {kept}")

    if lost_filter := lost_seen_filter(crawl_settings.load().data_root, date):
        stage(AssetSelection.assets("seen_url_filter"), lost_filter)
    stage(FRONTIER_STAGE, date)
    for shard in shards or crawl_settings.load().shard_keys():
        stage(FETCH_STAGE, str(fetch_partition_key(date, shard)))
    stage(CLOSE_STAGE, date)
    for job, per_shard in SHARD_CLOSE_STAGES if DAY_PER_SHARD else ():
        for key in [str(fetch_partition_key(date, shard)) for shard in SHARD_KEYS] if per_shard else [date]:
            stage(job.selection, key)


def days_between(first: str, last: str) -> list[str]:
    start, end = iso_day(first, "--date"), iso_day(last, "--until")
    if end < start:
        raise CrawlInputError(f"--until {last} is before --date {first}: give the earlier day first")
    return [(start + dt.timedelta(days=n)).isoformat() for n in range((end - start).days + 1)]


def iso_day(text: str, option: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise CrawlInputError(f"{option} {text!r} is not a date: write it as YYYY-MM-DD") from None


def check_days(days: list[str], start_date: str) -> None:
    """Every day is a daily partition: from the crawl's start_date up to today (UTC)."""
    last = daily_partitions.get_last_partition_key()
    for day in days:
        if day < start_date:
            raise CrawlInputError(f"{day} is before the crawl's start_date {start_date}: "
                                  "pick a later day, or move start_date in recrawl.toml")
        if last is None or day > last:
            raise CrawlInputError(f"{day} is after today's partition {last} (UTC): "
                                  "a day can be crawled once it has begun")


def check_previous_day_closed(root, first: str, rebuilt: tuple[str, ...] = ()) -> None:
    """The day before `first` that was started has closed: else its frontier would wait for it
    (previous_day_wait_s, hours) instead of telling the person at the terminal now. A close
    output the command rebuilds first (`rebuilt`: a lost seen-URL filter) does not count."""
    earlier = previous_day(root, first)
    missing = [output for output in earlier.missing if output not in rebuilt]
    if missing:
        raise CrawlInputError(f"{earlier.day} was started but has not closed ({', '.join(missing)} not "
                              f"written), and {first} builds on it: run `python -m crawl_assets.cli.cycle --date "
                              f"{earlier.day}` first (or day_close_job for {earlier.day} in the UI)")


def lost_seen_filter(root, first: str) -> str | None:
    """The day before `first` whose seen-URL filter is lost (missing or damaged, its URL
    registry whole): the command rebuilds it (seen_filter_job) before the day's runs, so moving
    a damaged filter away, or losing it, costs one short run instead of a day that cannot close."""
    earlier = previous_day(root, first).day
    return earlier if earlier is not None and seen_filter_lost(root, earlier) else None


def rebuild_seen_filter(day: str, queue: RunQueue, progress: Callable[[str], None]) -> None:
    progress(f"the seen-URL filter of {day} is missing or damaged: rebuilding it from the URL registry of {day}")
    (run,) = queue.run_all([daily_spec(seen_filter_job.name, day)], 1, progress)
    if not run.succeeded:
        raise CycleFailed(f"{run.label} failed (run {run.run_id}): {failure_reason(queue.instance, run.run_id)}")


def quarantine_files(root, paths: list[str], progress: Callable[[str], None]) -> None:
    """Set each damaged WARC file aside with its loss recorded (pipeline/archive/warc_quarantine.py),
    before the day's runs: the day's close then builds the catalog's lost_captures view."""
    for path in paths:
        progress(quarantine_warc(root, Path(path)).line())


def check_seed_files(settings: CrawlSettings, first: str, progress: Callable[[str], None]) -> int:
    """The seed files read as the seeds asset reads them, before any service starts: each bad
    line printed, and a first day without a valid seed refused; returns the bad lines' count."""
    found, bad = read_seeds(settings)
    for line in bad:
        progress(f"skipped seed line {line}")
    check_seeds_for(settings, first, len(found), len(bad))
    return len(bad)


def today() -> str:
    return dt.datetime.now(dt.timezone.utc).date().isoformat()


def run_days(days: list[str], shards: list[str] | None = None,
             progress: Callable[[str], None] = print, refetch: bool = False,
             before_day: Callable[[str], None] = lambda day: None, quarantine: list[str] = ()) -> list[CycleReport]:
    """Cycles for `days` in order through the instance in DAGSTER_HOME (started services
    stop at the end); raises CycleFailed, LaunchError or a CrawlError with a clear message.
    before_day(day) runs before each day's runs are submitted (the demo moves its web's clock).
    The repairs come first: the WARC files in `quarantine` set aside, a lost seen filter rebuilt."""
    settings = load_settings()
    check_days(days, settings.start_date)
    check_in_order(settings.data_root, days[0])
    lost_filter = lost_seen_filter(settings.data_root, days[0])
    check_previous_day_closed(settings.data_root, days[0], ("seen_url_filter",) if lost_filter else ())
    bad_seed_lines = check_seed_files(settings, days[0], progress)
    quarantine_files(settings.data_root, list(quarantine), progress)
    home = dagster_home()
    instance = open_instance(home)
    shards = shards or settings.shard_keys()
    whole_day = set(shards) == set(settings.shard_keys())
    reports = []
    what = f"cycle of {days[0]}" + (f" to {days[-1]}" if len(days) > 1 else "")
    # Held for the whole command, between its runs too: the triggers wait while it drives days.
    with command_lock(home, what), DagsterService(home) as service:
        progress(f"submitting runs through {service.url} "
                 f"({'dagster dev started for this command' if service.with_daemon else 'the running daemon'})")
        queue = RunQueue(service.url, instance, settings_run_config(), {DRIVER_TAG: CLI_DRIVER})
        if lost_filter:
            rebuild_seen_filter(lost_filter, queue, progress)
        for day in days:
            before_day(day)
            report = submit_cycle(day, queue, shards, settings.max_parallel_shards, progress, refetch,
                                  whole_day, settings.shard_keys())
            reports.append(dataclasses.replace(report, skipped_seed_lines=bad_seed_lines))
            progress(reports[-1].summary())
    return reports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--date", default=today(), help="the (first) day's partition (default: today, UTC)")
    parser.add_argument("--until", help="run the cycles of every day from --date to this one, in order")
    parser.add_argument("--shards", help="comma-separated shard keys (default: every shard)")
    parser.add_argument("--refetch", action="store_true",
                        help="fetch shards that finished before again (by default a finished shard is "
                             "not fetched twice and one cut short resumes); their older WARC files are kept aside. "
                             "Without --shards the whole day is replaced: its frontier is built again first")
    parser.add_argument("--quarantine", action="append", default=[], metavar="WARC_FILE",
                        help="first set this damaged WARC file aside (under the data root's quarantine/), keeping "
                             "its whole records in place and listing the lost ones in the catalog's lost_captures "
                             "view, so the days' closes pass again; as a damaged-file message proposes (repeatable)")
    args = parser.parse_args(argv)
    try:
        days = days_between(args.date, args.until or args.date)
        reports = run_days(days, args.shards.split(",") if args.shards else None,
                           progress=lambda line: print(line, flush=True), refetch=args.refetch,
                           quarantine=args.quarantine)
    except (CycleFailed, LaunchError, CrawlError) as exc:
        print(f"cycle failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(STOPPED, file=sys.stderr)
        return 130
    return 1 if any(report.failed for report in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
