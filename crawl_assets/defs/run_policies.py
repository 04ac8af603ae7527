"""Run policies read from the settings when the definitions load (like the partitions)."""

from dagster import Backoff, RetryPolicy

from ..crawler.settings import load_settings

FETCH_RETRIES = 2


def fetch_retry_policy() -> RetryPolicy:
    """A failed fetch batch (a crash, the machine's network down) is tried again FETCH_RETRIES
    times, fetch_retry_delay_s and then twice that later; a shard that still fails leaves a
    partial day, closed on what landed."""
    return RetryPolicy(max_retries=FETCH_RETRIES, delay=load_settings().fetch_retry_delay_s,
                       backoff=Backoff.EXPONENTIAL)
