"""Host importance for recrawl_priorities: how many other hosts link to a host (the links no
trap defence refused), and a page on a host the web points at outranks an equal page on a
host only its own pages link to."""

import math

import pyarrow as pa

from crawl_assets.pipeline.crawl_history import history_through
from crawl_assets.pipeline.priorities.priorities_step import recrawl_priorities
from crawl_assets.pipeline.recrawl_inputs import host_facts, host_importance
from crawl_files import settings_for, write_links, write_seeds

DAY = "2026-11-20"


def test_hosts_linked_from_more_other_hosts_matter_more(tmp_path):
    write_seeds(tmp_path, ["http://hub.test/", "http://lone.test/"])
    links = [(f"http://s{i}.test/a", "http://hub.test/p", 1) for i in range(3)]  # three other hosts
    links += [("http://s0.test/b", "http://hub.test/q", 1)]  # the same host again: counted once
    links += [("http://lone.test/", f"http://lone.test/{i}", 1) for i in range(5)]  # its own links only
    links += [("http://s9.test/", "http://lone.test/x", 1, "url_too_long")]  # refused: does not count
    write_links(tmp_path, DAY, links)
    importance = host_importance(history_through(tmp_path, DAY))
    assert dict(zip(importance["host"].to_pylist(), importance["importance"].to_pylist())) == {
        "hub.test": 1 + math.log(4)}
    facts = host_facts(tmp_path, DAY, settings_for(tmp_path), ["hub.test", "lone.test"], importance)
    assert facts["importance"].to_pylist() == [1 + math.log(4), 1.0]

    # Two pages alike in all but their host: the hub's is worth more and goes first.
    stamp = pa.array([None, None], pa.timestamp("us", tz="UTC"))
    stats = pa.table({"url": ["http://hub.test/p", "http://lone.test/p"], "host": ["hub.test", "lone.test"],
                      "change_rate": [0.5, 0.5], "last_visit_at": stamp, "last_fetched_at": stamp,
                      "last_status": pa.array([None, None], pa.int32()), "last_status_class": [None, None],
                      "gone_streak": pa.array([0, 0], pa.int64()), "pending_change": [False, False]})
    known = stats.select(["url", "host"])
    plan = recrawl_priorities(stats, None, facts, known, "2026-11-21",
                              settings_for(tmp_path, daily_fetch_budget=1, discovery_share=1.0))
    rows = {r["url"]: r for r in plan.urls.to_pylist()}
    assert rows["http://hub.test/p"]["importance"] > rows["http://lone.test/p"]["importance"]
    assert [u for u, r in rows.items() if r["planned"]] == ["http://hub.test/p"]
