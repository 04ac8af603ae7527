"""How a crawl error ends a Dagster run: it fails with the error's own sentence, and an error
that running again cannot help (a missing, unreadable or corrupt input; a full disk) skips the
asset's retry policy, so the command that launched it hears at once instead of after minutes.
A full disk met by any writer (pyarrow, DuckDB, a plain file) counts as one."""

from __future__ import annotations

import functools

from dagster import Failure

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
            full = disk_full_error(body.__name__, args, kwargs, reason)
            raise Failure(description=str(full), allow_retries=full.retry_helps) from exc

    return run


def disk_full_error(asset: str, args: tuple, kwargs: dict, reason: str) -> DiskFull:
    """The sentence for a full disk: where (the data root), why (the system's words) and what to
    do, naming the asset and partition to materialise again."""
    settings = kwargs.get("crawl_settings")
    where = f"the disk holding {settings.data_root}" if settings is not None else "the disk under the data root"
    context = args[0] if args else kwargs.get("context")
    partition = f" for {context.partition_key}" if getattr(context, "has_partition_key", False) else ""
    return DiskFull(f"{where} is full ({reason}): free some space there, then materialise "
                    f"{asset}{partition} again")
