"""How a crawl error ends a Dagster run: it fails with the error's own sentence, and an input
error (a missing, unreadable or corrupt input) skips the asset's retry policy, since running
again cannot help until a person fixes the input."""

from __future__ import annotations

import functools

from dagster import Failure

from ...crawler.crawl_errors import CrawlError, CrawlInputError


def fails_with_crawl_errors(body):
    """Decorate an asset body (under @asset) so a CrawlError fails the run with its message."""

    @functools.wraps(body)
    def run(*args, **kwargs):
        try:
            return body(*args, **kwargs)
        except CrawlError as exc:
            raise Failure(description=str(exc), allow_retries=not isinstance(exc, CrawlInputError)) from exc

    return run
