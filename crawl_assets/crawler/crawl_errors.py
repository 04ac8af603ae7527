"""The crawl's own errors: each message is the whole story, a sentence that names the input
or the file and says what to do. The command line prints it (no traceback); inside Dagster
the run fails with it (crawl_assets/defs/assets/failures.py).
"""

from __future__ import annotations

import sys


class CrawlError(Exception):
    """An error whose message a person acts on; raise a subclass."""


class CrawlInputError(CrawlError, ValueError):
    """An input is missing, unreadable or corrupt (a seed file, an earlier day's Parquet or
    Bloom filter file, a partition date). Nothing already crawled was changed; running again
    cannot help until the input is fixed, so Dagster does not retry it."""


class BatchStopped(CrawlError):
    """A fetch batch stopped before its end (the disk filled up, another run holds the
    partition) and kept its last checkpoint: run it again once the cause is gone and it
    resumes from there."""


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
