"""The crawl's own errors: each message is the whole story, a sentence that names the input
or the file and says what to do. The command line prints it (no traceback); inside Dagster
the run fails with it (crawl_assets/assets/failures.py).
"""

from __future__ import annotations


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
