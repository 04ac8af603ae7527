import email.utils
import time

import pytest

from crawl_assets.crawler.fetching.answer_policy import retry_after_seconds
from crawl_assets.crawler.fetching.politeness import HostPoliteness


def test_delay_is_the_largest_of_default_crawl_delay_adaptive_and_retry_after_plus_the_margin():
    # Each wait is 10 % longer than the delay, at most 1 s longer (politeness.SERVER_END_MARGIN).
    p = HostPoliteness(default_delay_s=1.0, response_time_factor=2.0, max_adaptive_delay_s=10.0)
    assert p.next_delay() == pytest.approx(1.1)
    p.crawl_delay_s = 3.0
    assert p.next_delay() == pytest.approx(3.3)
    p.observe(4.0)  # a slow host: 2 x 4 s
    assert p.next_delay() == pytest.approx(8.8)
    p.observe(100.0)
    assert p.next_delay() == pytest.approx(11.0)  # adaptive slow-down is capped
    p.retry_after_s = 30.0
    assert p.delay() == pytest.approx(31.0)  # the margin's cap: 1 s
    assert p.next_delay() == pytest.approx(31.0)
    assert p.next_delay() == pytest.approx(11.0)  # Retry-After applies once
    assert HostPoliteness.none().next_delay() == 0.0


def test_retry_after_accepts_seconds_and_http_dates():
    assert retry_after_seconds("120") == 120.0
    now = time.time()
    date = email.utils.formatdate(now + 60, usegmt=True)
    assert 58 <= retry_after_seconds(date, now=now) <= 61
    assert retry_after_seconds(email.utils.formatdate(now - 60, usegmt=True), now=now) == 0.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_the_response_time_is_a_moving_average_that_weighs_the_past_seven_to_three():
    p = HostPoliteness(default_delay_s=0.0, response_time_factor=1.0, max_adaptive_delay_s=100.0)
    p.observe(1.0)
    assert p.recent_response_s == 1.0  # the first answer alone
    p.observe(2.0)
    assert p.recent_response_s == pytest.approx(0.7 * 1.0 + 0.3 * 2.0)
    p.observe(10.0)
    assert p.recent_response_s == pytest.approx(0.7 * 1.3 + 0.3 * 10.0)
    assert p.next_delay() == pytest.approx(1.1 * 3.91)  # one response time, and the margin


def test_a_retry_after_leaves_no_trace_on_the_next_delay():
    p = HostPoliteness(default_delay_s=0.2, response_time_factor=0.0, max_adaptive_delay_s=0.0)
    p.retry_after_s = 5.0
    assert p.next_delay() == pytest.approx(5.5)  # 5 s and its 10 %
    assert p.next_delay() == pytest.approx(0.22)  # the default again, not a second of what it asked
