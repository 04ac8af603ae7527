"""How a crawl error ends a Dagster run: it fails with the error's own sentence, and an error
that running again cannot help (a missing, unreadable or corrupt input; a full disk) skips the
asset's retry policy, so the command that launched it hears at once instead of after minutes.
A full disk met by any writer (pyarrow, DuckDB, a plain file) counts as one.

A run terminated while an asset with a retry policy runs (Ctrl-C of a cycle command, Terminate
in the UI, its services stopping) must stop: Dagster's op boundary takes the interrupt for a
failure and runs the step again after the policy's delay, so the "terminated" runs went on
fetching minutes after the command had exited (terminations_not_retried)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from dagster import DagsterExecutionInterruptedError, Failure

from ...crawler.crawl_errors import CrawlError, DiskFull, disk_full_reason


def fails_with_crawl_errors(body):
    """Decorate an asset body (under @asset) so a CrawlError fails the run with its message."""

    @functools.wraps(body)
    def run(*args, **kwargs):
        try:
            return body(*args, **kwargs)
        except CrawlError as exc:
            raise Failure(description=str(exc), allow_retries=exc.retry_helps) from exc
        except Exception as exc:
            reason = disk_full_reason(exc)
            if reason is None:
                raise
            full = disk_full_error(body.__name__, args, kwargs, reason, exc)
            raise Failure(description=str(full), allow_retries=full.retry_helps) from exc

    return run


# DuckDB names the file it could not write: IO Error: Could not write file "PATH": ...
DUCKDB_FILE = re.compile(r'file "([^"]+)"')


TERMINATED = "terminated before it finished: run the partition again and a fetch batch resumes from its last checkpoint"


def terminations_not_retried(body):
    """Decorate the body of an asset that has a retry policy (under fails_with_crawl_errors):
    an interrupt fails its step for good. Only for a run of that one step: the Failure ends the
    step, not the run, which a plain interrupt (no retry policy) does."""

    @functools.wraps(body)
    def run(*args, **kwargs):
        try:
            return body(*args, **kwargs)
        except (KeyboardInterrupt, DagsterExecutionInterruptedError) as exc:
            raise Failure(description=TERMINATED, allow_retries=False) from exc

    return run


def disk_full_error(asset: str, args: tuple, kwargs: dict, reason: str, exc: BaseException) -> DiskFull:
    """The sentence for a full disk: where (the folder of the file the write was refused for,
    or else the data root as the settings resolve it), why (the system's words) and what to do,
    naming the asset and partition to materialise again."""
    context = args[0] if args else kwargs.get("context")
    partition = f" for {context.partition_key}" if getattr(context, "has_partition_key", False) else ""
    return DiskFull(f"the disk holding {full_folder(exc, kwargs.get('crawl_settings'))} is full ({reason}): "
                    f"free some space there, then materialise {asset}{partition} again")


def full_folder(exc: BaseException, crawl_settings) -> str:
    """The folder a refused write went to: the file the error names (an OSError's filename,
    DuckDB's message), else the data root (the resource's, or its settings files')."""
    named = getattr(exc, "filename", None) or (DUCKDB_FILE.search(str(exc)) or [None, None])[1]
    if named and Path(named).is_absolute():  # the steps write absolute paths under the root
        return str(Path(named).parent)
    if crawl_settings is None:
        return "the data root"
    return str(crawl_settings.load().data_root)
