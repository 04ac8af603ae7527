"""One host's state: robots.txt rules per origin with an expiry, politeness from settings."""

import dataclasses

import pytest

from crawl_assets.crawler.fetching.politeness import HostPoliteness
from crawl_assets.crawler.fetching.visit_state import RobotsEntry, VisitState
from crawl_assets.crawler.settings import load_settings
from crawl_assets.crawler.url_policy.robots import allow_all, disallow_all


def test_robots_rules_are_kept_per_origin_until_they_expire():
    state = VisitState("a.test")
    state.robots["http://a.test"] = RobotsEntry(allow_all("parsed"), expires=100.0)
    state.robots["https://a.test"] = RobotsEntry(disallow_all("disallow_all_5xx"), expires=10.0)
    assert state.robots_entry("http://a.test", now=99.9).policy.allowed("http://a.test/x")
    assert state.robots_entry("http://a.test", now=100.0) is None  # expired: fetched again
    assert not state.robots_entry("https://a.test", now=5.0).policy.allowed("https://a.test/x")
    assert state.robots_entry("https://a.test", now=10.0) is None
    assert state.robots_entry("http://a.test:8080", now=0.0) is None  # another origin, unknown


def test_politeness_starts_from_the_settings():
    settings = dataclasses.replace(load_settings(use_env=False), default_delay_s=1.5,
                                   response_time_factor=3.0, max_adaptive_delay_s=9.0)
    politeness = HostPoliteness.from_settings(settings)
    assert politeness.next_delay() == pytest.approx(1.5 * 1.1)  # the delay and its margin
    politeness.observe(2.0)
    assert politeness.next_delay() == pytest.approx(6.0 * 1.1)
    assert HostPoliteness.none().next_delay() == 0.0
