"""The crawl's own errors: each message is the whole story, a sentence that names the input
or the file and says what to do. The command line prints it (no traceback); inside Dagster
the run fails with it (crawl_assets/defs/assets/failures.py).
"""

from __future__ import annotations

import errno
import os
import sys

import duckdb

# A write the disk refused for want of room: full, over the user's quota, over the size limit.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


class CrawlError(Exception):
    """An error whose message a person acts on; raise a subclass."""

    # Whether Dagster's retry policy may run the step again: the one place each kind of
    # error says so (crawl_assets/defs/assets/failures.py reads it).
    retry_helps = True


class CrawlInputError(CrawlError, ValueError):
    """An input is missing, unreadable or corrupt (a seed file, an earlier day's Parquet or
    Bloom filter file, a partition date). Nothing already crawled was changed; running again
    cannot help until the input is fixed, so Dagster does not retry it."""

    retry_helps = False


class DiskFull(CrawlError):
    """The disk under the data root is full. A retry minutes later meets the same full disk,
    so the run fails at once with this sentence, and a person frees space and runs it again."""

    retry_helps = False


class BatchStopped(DiskFull):
    """A fetch batch stopped before its end because the disk filled up, and kept its last
    checkpoint: run it again once there is room and it resumes from there."""


def disk_full_reason(exc: BaseException) -> str | None:
    """The system's words ("No space left on device") when `exc` is a write the disk refused for
    want of room, else None: an OSError with such an errno, or DuckDB's IOException for one
    (it carries the system's text only)."""
    if isinstance(exc, OSError):
        return os.strerror(exc.errno) if exc.errno in DISK_FULL_ERRNOS else None
    if isinstance(exc, duckdb.IOException):
        return next((os.strerror(code) for code in DISK_FULL_ERRNOS if os.strerror(code) in str(exc)), None)
    return None


def print_uncaught_crawl_errors(program: str) -> None:
    """For a command line: a CrawlError nothing caught (a bad setting, read while the command's
    modules load, before its own handler runs) prints its sentence instead of a traceback,
    and the command exits with status 1."""
    previous = sys.excepthook

    def hook(kind, exc, traceback):
        if isinstance(exc, CrawlError):
            print(f"{program}: {exc}", file=sys.stderr)
        elif isinstance(exc, KeyboardInterrupt):  # Ctrl-C while the modules load
            print(f"{program}: stopped by Ctrl-C", file=sys.stderr)
        else:
            previous(kind, exc, traceback)

    sys.excepthook = hook
