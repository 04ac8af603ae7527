"""A host's delay as its day's fetch log shows it (host_delays.observed_delays, which caps its
day at 86,400 / delay): the shortest gap from an answer's end to the next request's start, of
at least MIN_GAPS gaps, kept between default_delay_s and the longest delay the engine keeps."""

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest

from crawl_assets.pipeline.priorities.host_delays import MIN_GAPS, observed_delays
from crawl_files import fetch_row, settings_for, write_fetch_log

DAY = "2026-11-20"
START = datetime(2026, 11, 20, 10, tzinfo=timezone.utc)


def requests(host, starts_s, duration_ms=100.0, **fields):
    """One answered fetch of `host` per start (seconds after START)."""
    return [fetch_row(f"http://{host}/{i}", START + timedelta(seconds=s), duration_ms=duration_ms, **fields)
            for i, s in enumerate(starts_s)]


def test_the_delay_is_the_shortest_gap_from_an_answers_end_to_the_next_start(tmp_path):
    # Gaps of 20, 5 and 9 s after 1 s answers: the shortest, 5 s, is the delay in force; the
    # rows in another order in the file (the log is by shard, not by time).
    rows = requests("slow.test", [0, 21, 27, 37], duration_ms=1000.0)
    write_fetch_log(tmp_path, DAY, rows[::-1])
    assert observed_delays(tmp_path, DAY, settings_for(tmp_path)) == {"slow.test": pytest.approx(5.0)}


def test_a_host_needs_min_gaps_gaps_else_it_keeps_the_default(tmp_path):
    assert MIN_GAPS == 3
    write_fetch_log(tmp_path, DAY, requests("three.test", [0, 4, 8, 12], duration_ms=0.0)
                    + requests("two.test", [0, 4, 8], duration_ms=0.0) + requests("one.test", [0, 4], duration_ms=0.0))
    assert observed_delays(tmp_path, DAY, settings_for(tmp_path)) == {"three.test": pytest.approx(4.0)}


def test_only_answered_requests_of_the_day_count(tmp_path):
    # Between the answered requests 10 s apart: one without an answer (status null) 1 s after
    # one, and a row without a time: neither is a request the delay spaced.
    rows = requests("host.test", [0, 10, 20, 30], duration_ms=0.0)
    rows += [fetch_row("http://host.test/failed", START + timedelta(seconds=11), status=None, duration_ms=0.0),
             fetch_row("http://host.test/untimed", START, fetched_at=None)]
    write_fetch_log(tmp_path, DAY, rows)
    # The day before's and the day after's logs (1 s apart) are not the day's.
    write_fetch_log(tmp_path, "2026-11-19", requests("host.test", [-86_400 + s for s in range(5)], duration_ms=0.0))
    write_fetch_log(tmp_path, "2026-11-21", requests("host.test", [86_400 + s for s in range(5)], duration_ms=0.0))
    assert observed_delays(tmp_path, DAY, settings_for(tmp_path)) == {"host.test": pytest.approx(10.0)}


def test_a_hosts_requests_in_several_shard_files_are_one_sequence(tmp_path):
    # A host moved between shards within the day: its gaps run across the two files (a gap of
    # 2 s between the last of one file and the first of the other); an unknown duration is 0.
    write_fetch_log(tmp_path, DAY, requests("moved.test", [0, 6, 12], duration_ms=None), shard="s00")
    write_fetch_log(tmp_path, DAY, requests("moved.test", [14, 20, 26], duration_ms=None), shard="s01")
    assert observed_delays(tmp_path, DAY, settings_for(tmp_path)) == {"moved.test": pytest.approx(2.0)}


def test_the_delay_is_kept_between_the_default_and_the_longest_the_engine_keeps(tmp_path):
    write_fetch_log(tmp_path, DAY, requests("eager.test", [0, 0.3, 0.6, 0.9], duration_ms=0.0)
                    + requests("idle.test", [0, 500, 1000, 1500], duration_ms=0.0)
                    + requests("mid.test", [0, 45, 90, 135], duration_ms=0.0))
    settings = settings_for(tmp_path)
    assert (settings.default_delay_s, settings.max_crawl_delay_s, settings.max_adaptive_delay_s) == (1.0, 30.0, 60.0)
    # 0.3 s is under the default delay, which the engine keeps at least; 500 s is past any
    # delay it keeps (the host's queue ran dry): the adaptive delay's 60 s, the longest.
    assert observed_delays(tmp_path, DAY, settings) == {
        "eager.test": pytest.approx(1.0), "idle.test": pytest.approx(60.0), "mid.test": pytest.approx(45.0)}
    # The longest is whichever of the three is longest: the Crawl-delay's limit ...
    crawl = dataclasses.replace(settings, max_crawl_delay_s=100.0, max_adaptive_delay_s=20.0)
    assert observed_delays(tmp_path, DAY, crawl) == {
        "eager.test": pytest.approx(1.0), "idle.test": pytest.approx(100.0), "mid.test": pytest.approx(45.0)}
    # ... or the default delay itself, above both limits: every host keeps it.
    slow_default = dataclasses.replace(settings, default_delay_s=70.0, max_crawl_delay_s=10.0, max_adaptive_delay_s=20.0)
    assert observed_delays(tmp_path, DAY, slow_default) == {
        "eager.test": pytest.approx(70.0), "idle.test": pytest.approx(70.0), "mid.test": pytest.approx(70.0)}


def test_a_day_without_a_fetch_log_has_no_delays(tmp_path):
    assert observed_delays(tmp_path, DAY, settings_for(tmp_path)) == {}
    write_fetch_log(tmp_path, "2026-11-19", requests("host.test", [0, 5, 10, 15], duration_ms=0.0))
    assert observed_delays(tmp_path, DAY, settings_for(tmp_path)) == {}
