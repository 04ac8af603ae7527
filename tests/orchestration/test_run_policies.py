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


def test_the_retry_delay_is_the_settings_one(tmp_path, monkeypatch):
    """The settings given (the definitions' own when none is), not the project's default."""
    given = dataclasses.replace(load_settings(use_env=False), fetch_retry_delay_s=45.0)
    assert fetch_retry_policy(given).delay == 45.0
    overlay = tmp_path / "slow_retries.toml"
    overlay.write_text("[crawl]\nfetch_retry_delay_s = 30.0\n")
    monkeypatch.setenv("RECRAWL_SETTINGS", str(overlay))
    assert fetch_retry_policy().delay == 30.0


def test_a_terminated_step_is_not_retried_by_its_retry_policy():
    """Dagster's op boundary takes an interrupt (a run terminated: Ctrl-C of a cycle command, the
    UI's Terminate) for a failure and retries the step after the policy's delay; the fetch batch
    says no, so a terminated run stops."""
    from dagster import (DagsterEventType, DagsterExecutionInterruptedError, RetryPolicy, asset,
                         instance_for_test, materialize)

    from crawl_assets.defs.assets.failures import TERMINATED, terminations_not_retried

    attempts = []

    def interrupted_once():
        attempts.append(1)
        if len(attempts) == 1:
            raise DagsterExecutionInterruptedError()  # what a termination raises in the step

    plain = asset(name="plain", retry_policy=RetryPolicy(max_retries=2))(interrupted_once)
    guarded = asset(name="guarded", retry_policy=RetryPolicy(max_retries=2))(terminations_not_retried(interrupted_once))
    with instance_for_test() as instance:
        assert materialize([plain], instance=instance, raise_on_error=False).success  # retried, and it ran again
        assert len(attempts) == 2
        attempts.clear()
        result = materialize([guarded], instance=instance, raise_on_error=False)
        kinds = [e.dagster_event.event_type for e in instance.all_logs(result.run_id) if e.dagster_event]
    assert not result.success and len(attempts) == 1 and DagsterEventType.STEP_UP_FOR_RETRY not in kinds
    (failure,) = result.get_step_failure_events()
    assert failure.step_failure_data.user_failure_data.description == TERMINATED
