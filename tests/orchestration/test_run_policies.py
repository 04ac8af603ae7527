"""The fetch batch's retry waits, as Dagster computes them from the one policy that sets them."""

import dataclasses

from crawl_assets.crawler.settings import load_settings
from crawl_assets.defs.run_policies import FETCH_RETRIES, fetch_retry_policy


def test_a_failed_fetch_batch_waits_the_retry_delay_and_then_twice_it():
    settings = dataclasses.replace(load_settings(use_env=False), fetch_retry_delay_s=60.0)
    policy = fetch_retry_policy(settings)
    # RetryPolicy.calculate_delay(n) is what Dagster's executor waits before retry n.
    waits = [policy.calculate_delay(n) for n in range(1, policy.max_retries + 1)]
    assert policy.max_retries == FETCH_RETRIES == 2
    assert waits == [60.0, 120.0]  # README: fetch_retry_delay_s (60 s), then twice that (120 s)
