"""Run policies read from the settings when the definitions load (like the partitions)."""

from dagster import Backoff, RetryPolicy

from ..crawler.settings import CrawlSettings, load_settings

FETCH_RETRIES = 2


def fetch_retry_policy(settings: CrawlSettings | None = None) -> RetryPolicy:
    """A failed fetch batch (a crash, the machine's network down) is tried again FETCH_RETRIES
    times, fetch_retry_delay_s and then twice that later; a shard that still fails leaves a
    partial day, closed on what landed. (Dagster's LINEAR backoff waits the delay times the
    retry's number, so 1x then 2x; its EXPONENTIAL waits (2^n - 1)x, so 1x then 3x.)"""
    delay_s = (settings or load_settings()).fetch_retry_delay_s
    return RetryPolicy(max_retries=FETCH_RETRIES, delay=delay_s, backoff=Backoff.LINEAR)
