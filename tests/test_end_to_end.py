"""Two recrawl cycles through Dagster against a small demo web (10 hosts)."""

import time
from datetime import datetime, timezone

import duckdb
import pyarrow.parquet as pq
import pytest
from dagster import DagsterInstance
from warcio.archiveiterator import ArchiveIterator

from crawl_assets.cli.cycle import run_cycle
from crawl_assets.crawler.vocabulary import StatusClass
from crawl_assets.storage.layout import fetch_log_file, frontier_file

from support import TEST_DELAY_S, DemoWebProcess, assert_polite, assert_warcio_check_passes, write_test_settings

DAY1, DAY2 = "2026-11-28", "2026-11-29"


@pytest.fixture(scope="module")
def small_web():
    with DemoWebProcess(seed=7, hosts=10, pages_per_host=20) as web:
        yield web


@pytest.fixture(scope="module")
def crawl(small_web, tmp_path_factory):
    folder = tmp_path_factory.mktemp("e2e")
    # Seeds on 4 of the 10 hosts: the others are reached through cross-host links only.
    resource = write_test_settings(folder, small_web.web, seed_hosts=4)
    settings = resource.load()
    with DagsterInstance.ephemeral() as instance:
        run_cycle(DAY1, instance, resource)
        between_days = time.time()
        run_cycle(DAY2, instance, resource)
        after_day2 = time.time()
    log = small_web.stop()
    day1_log = [r for r in log if r["end"] <= between_days]
    day2_log = [r for r in log if r["start"] > between_days]
    day2_run = (datetime.fromtimestamp(between_days, timezone.utc),
                datetime.fromtimestamp(after_day2, timezone.utc))  # wall clock
    return settings, day1_log, day2_log, day2_run


def table(con, sql, *params):
    return con.execute(sql, list(params)).fetchall()


def test_every_frontier_url_has_a_fetch_log_row(crawl):
    settings, _, _, _ = crawl
    for shard in settings.shard_keys():
        frontier = set(pq.read_table(frontier_file(settings.data_root, DAY1, shard)).column("url").to_pylist())
        fetched = pq.read_table(fetch_log_file(settings.data_root, DAY1, shard)).to_pylist()
        assert frontier <= {row["url"] for row in fetched}
        assert len(fetched) == len({row["url"] for row in fetched})  # each URL once per batch


def test_warcs_pass_warcio_check_and_match_the_fetch_log_one_to_one(crawl):
    settings, _, _, _ = crawl
    warcs = sorted((settings.data_root / "warc" / f"date={DAY1}").glob("shard=*/*.warc.gz"))
    assert warcs and not list(settings.data_root.glob("warc/**/*.open"))
    assert_warcio_check_passes(*warcs)

    responses = {}
    for path in warcs:
        with open(path, "rb") as fh:
            it = ArchiveIterator(fh)
            for record in it:
                if record.rec_type == "response":
                    responses[record.rec_headers.get_header("WARC-Target-URI")] = (
                        path.name, it.get_record_offset(), record.http_headers.get_statuscode())
    con = duckdb.connect(str(settings.catalog_path), read_only=True)
    logged = {url: (f, off, str(status)) for url, f, off, status in table(
        con, "SELECT url, warc_file, warc_offset, status FROM fetches "
             "WHERE date = ? AND warc_file IS NOT NULL", DAY1)}
    assert len(responses) > 100
    assert logged == responses


def test_the_catalog_answers_for_a_known_page(crawl, small_web):
    settings, _, _, _ = crawl
    home = small_web.web.seed_urls()[0]
    con = duckdb.connect(str(settings.catalog_path), read_only=True)
    status, content_type, size, etag = table(
        con, "SELECT status, content_type, bytes, etag FROM pages WHERE url = ?", home)[0]
    expected = small_web.web.respond(small_web.web.hostnames()[0], "/", {})
    assert (status, size, etag) == (200, len(expected.body), expected.header("ETag"))
    assert content_type.startswith("text/html")
    views = {r[0] for r in table(con, "SELECT view_name FROM duckdb_views() WHERE NOT internal")}
    assert {"seeds", "frontier", "fetches", "pages", "links"} <= views


def test_the_demo_web_saw_one_request_at_a_time_per_host_and_the_delay(crawl, small_web):
    settings, day1_log, day2_log, _ = crawl
    assert len({r["host"] for r in day1_log}) >= 4
    crawl_delays = {small_web.web.hostname(i): small_web.web.robots_rules(i)["crawl_delay"] or 0.0
                    for i in range(10)}
    assert_polite(day1_log + day2_log, TEST_DELAY_S, crawl_delays,
                  response_time_factor=settings.response_time_factor,
                  max_adaptive_delay_s=settings.max_adaptive_delay_s)


def test_the_second_cycle_fetches_the_links_discovered_in_the_first(crawl):
    settings, _, _, _ = crawl
    con = duckdb.connect(str(settings.catalog_path), read_only=True)
    day1_targets = {r[0] for r in table(con, "SELECT DISTINCT target FROM links WHERE date = ?", DAY1)}
    day1_fetched = {r[0] for r in table(con, "SELECT url FROM fetches WHERE date = ?", DAY1)}
    day2_fetched = {r[0] for r in table(con, "SELECT url FROM fetches WHERE date = ?", DAY2)}
    # Every target fits the per-host budget (40 > 20 pages + home, sitemap, private pages),
    # and day 2 follows day 1's recrawl plan: all of them come back but the private pages
    # robots.txt refused on day 1, which come back on the 404 interval (priorities_step).
    refused = {r[0] for r in table(con, "SELECT url FROM fetches WHERE date = ? AND status_class = ?",
                                   DAY1, StatusClass.ROBOTS_DISALLOWED)}
    assert refused and day1_targets - day2_fetched == refused
    # Cross-shard links could not be fetched on day 1; day 2 picks them up.
    assert day1_targets - day1_fetched
    assert len(day2_fetched) > len(day1_fetched)
    hosts = "SELECT count(DISTINCT host) FROM fetches WHERE date = ? AND status IN (200, 304)"
    assert table(con, hosts, DAY1)[0][0] < table(con, hosts, DAY2)[0][0] == 10


def test_the_second_cycle_asks_conditionally_and_unchanged_pages_answer_304(crawl, small_web):
    settings, _, day2_log, _ = crawl
    con = duckdb.connect(str(settings.catalog_path), read_only=True)
    day1_ok = {r[0] for r in table(con, "SELECT url FROM fetches WHERE date = ? AND status = 200", DAY1)}
    again = table(con, "SELECT url, status, status_class FROM fetches WHERE date = ?", DAY2)
    revisited = [(status, cls) for url, status, cls in again if url in day1_ok]
    # The demo web did not change between the two days: every page answers 304 Not Modified.
    assert revisited and set(revisited) == {(304, "not_modified")}
    assert sum(r["conditional"] for r in day2_log) >= len(revisited)
    # pages keeps the full copy from day 1 and notes the later check.
    row = table(con, "SELECT status, last_status_class, last_checked_at > fetched_at FROM pages "
                     "WHERE url = ?", small_web.web.seed_urls()[0])[0]
    assert row == (200, "not_modified", True)


def test_the_url_registry_is_the_authoritative_record_in_the_catalog(crawl):
    settings, _, _, day2_run = crawl
    con = duckdb.connect(str(settings.catalog_path), read_only=True)
    urls = {r[0]: r[1:] for r in table(
        con, "SELECT url, first_seen::VARCHAR, depth, discovered_from, last_fetched FROM urls")}
    linked = {r[0] for r in table(con, "SELECT DISTINCT target FROM links WHERE dropped_reason IS NULL")}
    fetched = {r[0] for r in table(con, "SELECT url FROM fetches WHERE status IS NOT NULL")}
    assert linked | fetched <= set(urls)
    seed = table(con, "SELECT url FROM seeds")[0][0]
    assert urls[seed][1] == 0
    # last_fetched is the seed's latest answered fetch: day 2's (a 304), inside day 2's run.
    (day2_fetch,), = table(con, "SELECT fetched_at FROM fetches WHERE url = ? AND date = ? "
                                "AND status IS NOT NULL", seed, DAY2)
    (day1_fetch,), = table(con, "SELECT fetched_at FROM fetches WHERE url = ? AND date = ?", seed, DAY1)
    assert urls[seed][3] == day2_fetch
    assert day1_fetch < day2_run[0] <= day2_fetch <= day2_run[1]
    # Every URL's last_fetched is its latest answered fetch; never answered (robots-disallowed
    # pages, links beyond the budget): NULL.
    answered = dict(table(con, "SELECT url, max(fetched_at) FROM fetches WHERE status IS NOT NULL GROUP BY url"))
    assert {url: row[3] for url, row in urls.items()} == {url: answered.get(url) for url in urls}
    assert any(row[3] is None for row in urls.values())
    # A URL first linked on day 2 was discovered from a page that links to it.
    day2_only = [u for u, (first, _, source, _) in urls.items() if first == DAY2]
    assert day2_only
    for url in day2_only[:20]:
        source = urls[url][2]
        assert table(con, "SELECT count(*) FROM links WHERE source = ? AND target = ?", source, url)[0][0]


def test_day_two_knew_day_one_through_the_seen_filter(crawl):
    settings, _, _, _ = crawl
    from crawl_assets.crawler.url_policy.url_bloom import load_filter, measured_fp_rate
    from crawl_assets.storage.layout import seen_filter_file

    bloom = load_filter(seen_filter_file(settings.data_root, DAY1))
    assert measured_fp_rate(bloom, 20_000) < 0.003
    con = duckdb.connect(str(settings.catalog_path), read_only=True)
    day1_urls = [r[0] for r in table(con, "SELECT DISTINCT target FROM links WHERE date = ?", DAY1)]
    assert all(url in bloom for url in day1_urls)  # no false negatives, ever
    # Day 2's links to URLs known on day 1 are marked as not new.
    known_again = table(con, """SELECT count(*) FILTER (WHERE is_new), count(*) FROM links
                                WHERE date = ? AND target IN (SELECT target FROM links WHERE date = ?)""",
                        DAY2, DAY1)[0]
    assert known_again[1] > 0 and known_again[0] == 0


def test_not_modified_answers_are_revisit_records_that_point_at_the_first_capture(crawl):
    settings, _, _, _ = crawl
    warcs = sorted((settings.data_root / "warc" / f"date={DAY2}").glob("shard=*/*.warc.gz"))
    assert_warcio_check_passes(*warcs)
    revisits = {}
    for path in warcs:
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type == "revisit":
                    h = record.rec_headers
                    revisits[h.get_header("WARC-Target-URI")] = (
                        h.get_header("WARC-Profile"), h.get_header("WARC-Refers-To-Target-URI"),
                        h.get_header("WARC-Refers-To-Date"), record.http_headers)
    con = duckdb.connect(str(settings.catalog_path), read_only=True)
    day1 = {url: when for url, when in table(
        con, "SELECT url, fetched_at FROM fetches WHERE date = ? AND status = 200", DAY1)}
    logged = {r[0] for r in table(con, "SELECT url FROM fetches WHERE date = ? AND warc_type = 'revisit'", DAY2)}
    assert revisits and set(revisits) == logged
    for url, (profile, refers_to, refers_date, status) in revisits.items():
        # No HTTP block: replay serves the first capture's status and headers (warc.py says why).
        assert profile.endswith("/revisit/server-not-modified") and status is None
        assert refers_to == url and refers_date.startswith(day1[url].strftime("%Y-%m-%dT%H:%M:%S"))
