"""Day order: a day's frontier is built only once the crawl's previous day has closed.

Day D reads what day D-1 left: its links and fetch logs (the frontier), and the files its
close wrote (the seen-URL filter and the hosts' near-duplicate ratios, read by the fetch
batches; the recrawl plan, read by the frontier). Dagster cannot declare these reads: links[D-1] is built from frontier_snapshot[D-1],
and Dagster refuses a dependency cycle between two assets even across partitions
(dagster-io/dagster#13368; only an asset's dependency on its own earlier partitions is
allowed). So the frontier checks them here and waits: launched early (a backfill over several
days starts every day's frontier once the seeds are done), it builds from the same files the
nightly cycle would have seen, never from half a day.

"The previous day" is the latest earlier day that has a frontier (a day nobody crawled is
skipped); it is closed when each file below exists and is newer than that day's last fetch
log (a fetch run again after the close makes the close stale). A damaged fetch log (truncated
by hand or by a failing disk) is newer than the close as well: it is named as damaged.

Two rules keep the chain of days whole (README, *Operations*):
- a day whose fetch began keeps its frontier: building it again would leave the batches
  fetched (or fetching) against a frontier that is no longer the day's (`fetch_begun`); only
  an explicit refetch of the whole day builds it again;
- a day before the crawl's newest day is not crawled (`check_in_order`): each day's
  statistics fold into the next, so a day slipped in behind later days, or fetched again
  beneath them, would leave their state built on a day that no longer exists.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from ..crawler.crawl_errors import CrawlError, CrawlInputError
from ..crawler.settings import CrawlSettings
from ..storage.layout import host_dup_ratio_file, seen_filter_file
from ..storage.shared_root import read_table
from .input_files import readable_parquet
from .fetch_step import CHECKPOINT_DIR
from .priorities.recrawl_plan import priorities_written

# The close's outputs the next day reads: the asset that writes each, and its file.
CLOSE_OUTPUTS: dict[str, Callable[[Path, str], Path]] = {
    "seen_url_filter": seen_filter_file,
    "near_duplicate_clusters": host_dup_ratio_file,
    "recrawl_priorities": priorities_written,  # the plan for the next day (pipeline/priorities/recrawl_plan.py)
}
POLL_S = 2.0  # how often a waiting frontier looks again (the limit: previous_day_wait_s)


class PreviousDayOpen(CrawlError):
    """The previous crawl day did not close in time; the message names what is missing."""


class EarlierDay(CrawlInputError):
    """A day before the crawl's newest day was asked for; the message says what to do."""


@dataclass(frozen=True)
class PreviousDay:
    day: str | None  # the latest earlier day with a frontier; None on the crawl's first day
    missing: tuple[str, ...] = ()  # close outputs not written (or stale) yet

    @property
    def closed(self) -> bool:
        return not self.missing


def crawled_days(root: Path) -> list[str]:
    """Days with a frontier file, in order."""
    return sorted({p.parent.parent.name.removeprefix("date=")
                   for p in (root / "frontier").glob("date=*/shard=*/frontier.parquet")})


def check_in_order(root: Path, date: str) -> None:
    """Raises EarlierDay when a later day than `date` has a frontier already."""
    later = [day for day in crawled_days(root) if day > date]
    if later:
        raise EarlierDay(
            f"{date} is before {later[-1]}, the newest day this crawl has started, and each day's statistics "
            f"fold into the next: crawl {later[-1]} or a later day, or start a new data root (data_root in the "
            f"settings) to crawl {date}")


def fetch_begun(root: Path, date: str) -> list[str]:
    """The shards of `date` whose fetch batch landed (a fetch log) or began (a checkpoint)."""
    landed = {p.parent.name for p in (root / "fetch_log" / f"date={date}").glob("shard=*/*.parquet")}
    running = {p.parent.name for p in (root / "warc" / f"date={date}").glob(f"shard=*/{CHECKPOINT_DIR}")}
    return sorted(name.removeprefix("shard=") for name in landed | running)


def previous_day(root: Path, date: str) -> PreviousDay:
    earlier = [day for day in crawled_days(root) if day < date]
    if not earlier:
        return PreviousDay(None)
    day = earlier[-1]
    logs = list((root / "fetch_log" / f"date={day}").glob("shard=*/*.parquet"))
    last_fetch = max((p.stat().st_mtime for p in logs), default=0.0)
    missing = tuple(asset for asset, file_of in CLOSE_OUTPUTS.items()
                    if not file_of(root, day).exists() or file_of(root, day).stat().st_mtime < last_fetch)
    if missing:  # a fetch log damaged after the close is newer than it too: name it, not the close
        readable_parquet(logs)
    return PreviousDay(day, missing)


def check_seeds_for(settings: CrawlSettings, date: str, seed_count: int, bad_count: int = 0) -> None:
    """The crawl's first day has nothing but the seeds to fetch: without one, every run of the
    day would be empty, so it is refused at once (later days fetch what earlier days found and
    planned, and for them an empty seed list is a choice)."""
    if seed_count or previous_day(settings.data_root, date).day is not None:
        return
    bad = f" ({bad_count} bad line{'s' if bad_count != 1 else ''} skipped)" if bad_count else ""
    raise CrawlInputError(
        f"no seed URL for {date}, the crawl's first day: {settings.seeds_dir} holds no *.txt file with a "
        f"valid URL{bad}: put one URL a line in a .txt file there, then run this day again")


def wait_for_previous_day(root: Path, date: str, wait_limit_s: float,
                          log: Callable[[str], None] = lambda line: None, poll_s: float = POLL_S) -> PreviousDay:
    """Returns once the previous crawl day is closed (at once when it is, or there is none);
    raises PreviousDayOpen after `wait_limit_s`."""
    deadline = time.monotonic() + wait_limit_s
    state = previous_day(root, date)
    if not state.closed:
        log(f"waiting for {state.day} to close before building {date}: {', '.join(state.missing)} not written yet")
    while not state.closed:
        if time.monotonic() > deadline:
            raise PreviousDayOpen(
                f"the frontier of {date} needs the crawl's previous day {state.day} closed, but "
                f"{', '.join(f'{a}[{state.day}]' for a in state.missing)} did not land within "
                f"{wait_limit_s:.0f} s (previous_day_wait_s): run day_close_job for {state.day} (or all of that day's "
                f"fetch batches first), then this frontier again")
        time.sleep(poll_s)
        state = previous_day(root, date)
    return state


def urls_new_since(root: Path, day: str | None, frontier: pa.Table) -> int:
    """How many of `frontier`'s URLs were not in the frontier of `day` (all of them without one)."""
    files = sorted((root / "frontier" / f"date={day}").glob("shard=*/frontier.parquet")) if day else []
    if not files:
        return frontier.num_rows
    before = set(read_table(files, columns=["url"]).column("url").to_pylist())
    return sum(url not in before for url in frontier.column("url").to_pylist())
