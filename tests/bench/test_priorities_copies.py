"""bench/priorities.py's crawl of copies: the 100-million-URL benchmark's history is ten copies
of the 10-million crawl, its change_stats state the copied crawl's rebuild, replicated
(replicate_state) instead of rebuilt from 500 million rows. That holds only if the replica is
what the rebuild of the copies writes: compared here, file by file."""

from dataclasses import replace
from datetime import timedelta

import duckdb
import pyarrow as pa
import pytest

from bench.priorities import START_DAY, check_copies, generate, last_day, replicate_state
from crawl_assets.crawler.settings import CrawlSettings
from crawl_assets.pipeline.change_stats.change_stats_step import change_stats
from crawl_assets.pipeline.change_stats.url_change_state import register_change_stats, url_state

URLS, HOSTS, DAYS, COPIES = 3_000, 30, 10, 3


def rebuilt(log, root, settings):
    day = last_day(DAYS) - timedelta(days=1)
    change_stats(str(log / "date=*" / "*" / "*.parquet"), day, settings, state_root=root)
    return url_state(root, day.isoformat())


def rows(con, query: str) -> pa.Table:
    return con.sql(query).to_arrow_table()


def assert_same(left: pa.Table, right: pa.Table, what: str) -> None:
    assert left.column_names == right.column_names, what
    assert left.num_rows == right.num_rows, what
    for name in left.column_names:
        a, b = left[name].combine_chunks(), right[name].combine_chunks()
        if pa.types.is_floating(a.type):  # (sums over more URLs: the same up to the order of additions)
            assert a.is_null().equals(b.is_null()), (what, name)
            assert a.fill_null(0).to_numpy() == pytest.approx(b.fill_null(0).to_numpy(), rel=1e-9, abs=1e-12), \
                (what, name)
        else:
            assert a.equals(b), (what, name)


def test_replicated_state_is_the_rebuild_of_the_copies(tmp_path):
    settings = replace(CrawlSettings(), daily_fetch_budget=URLS // 10)
    generate(tmp_path / "copies", URLS, 5 * URLS, HOSTS, DAYS, copies=COPIES)
    generate(tmp_path / "one", URLS // COPIES, 5 * URLS // COPIES, HOSTS // COPIES, DAYS)
    whole = rebuilt(tmp_path / "copies", tmp_path / "whole_state", settings)
    one = rebuilt(tmp_path / "one", tmp_path / "one_state", settings)
    day = whole.base.parent.name.removeprefix("date=")
    replicate_state(tmp_path / "one_state", day, tmp_path / "replica", URLS, HOSTS, COPIES)
    replica = url_state(tmp_path / "replica", day)

    con = duckdb.connect()
    for name, state in (("whole", whole), ("replica", replica)):
        register_change_stats(con, state, f"stats_{name}")
    assert_same(rows(con, "SELECT * FROM stats_replica ORDER BY url"), rows(con, "SELECT * FROM stats_whole ORDER BY url"),
                "change_stats")
    assert rows(con, "SELECT count(DISTINCT host) AS n FROM stats_whole")["n"][0].as_py() == HOSTS
    for name in ("base", "priors", "sums", "host_events"):
        ours, theirs = getattr(replica, name), getattr(whole, name)
        columns = rows(con, f"SELECT * FROM read_parquet('{theirs}') LIMIT 0").column_names
        order = ", ".join(columns[:5])  # (every file's leading columns name its row)
        assert_same(rows(con, f"SELECT {', '.join(columns)} FROM read_parquet('{ours}') ORDER BY {order}"),
                    rows(con, f"SELECT * FROM read_parquet('{theirs}') ORDER BY {order}"), name)
    # the copied crawl is a crawl of its own: its URLs are a third of the copies'
    assert rows(con, f"SELECT count(*) AS n FROM read_parquet('{one.base}')")["n"][0].as_py() * COPIES == \
        rows(con, f"SELECT count(*) AS n FROM read_parquet('{whole.base}')")["n"][0].as_py()
    assert str(START_DAY) < day


def test_copies_must_divide_the_crawl():
    assert check_copies(100_000_000, 1_000_000, 10) is None
    assert "--copies 7" in check_copies(100_000_000, 1_000_000, 7)
    assert check_copies(1000, 30, 10) is not None  # a copy: 100 URLs on 3 hosts, not a whole number a host
