"""Two days of the TLS test web (tests/tls_web.py) through the pipeline steps a day's runs take
(frontier, fetch, registry and seen filter, day report), without Dagster: what the first day
learns of hosts that serve https (an http->https move, HSTS) holds on the second day, so each
page has one URL, and the day report counts the TLS failures by name."""

import dataclasses

import duckdb
import pyarrow as pa
import pytest

from crawl_assets.crawler.url_policy.url_bloom import save_filter
from crawl_assets.crawler.vocabulary import StatusClass
from crawl_assets.pipeline.crawl_history import history_before, history_through
from crawl_assets.pipeline.fetch_step import fetch_inputs, run_fetch_step
from crawl_assets.pipeline.frontier_step import build_frontier
from crawl_assets.pipeline.registry_step import build_registry, build_seen_filter, load_registry_urls
from crawl_assets.pipeline.report.report_step import day_report, summary_markdown
from crawl_assets.storage.layout import (dropped_file, fetch_log_file, frontier_file, links_file, seen_filter_file,
                                         url_registry_file, warc_dir, write_parquet_atomic)
from crawl_files import fetch_row, settings_for, write_fetch_log, write_links, write_seeds
from tls_web import TlsWeb

DAYS = ["2026-12-01", "2026-12-02"]
MOVED_OR_HSTS = ("http://moved.tls.test/", "http://hsts.tls.test/")


def crawl_day(settings, day: str) -> None:
    root = settings.data_root
    frontier = build_frontier(settings, history_before(root, day))
    for shard, rows in frontier.shard_tables():
        write_parquet_atomic(rows, frontier_file(root, day, shard))
        result = run_fetch_step(settings, shard, fetch_inputs(root, day, shard, settings), warc_dir(root, day, shard),
                                warc_prefix=f"tls-{day}-{shard}")
        write_parquet_atomic(result.fetch_log, fetch_log_file(root, day, shard))
        write_parquet_atomic(result.links, links_file(root, day, shard))
        write_parquet_atomic(result.dropped, dropped_file(root, day, shard))
    write_parquet_atomic(build_registry(day, history_through(root, day)).table, url_registry_file(root, day))
    save_filter(build_seen_filter(load_registry_urls(root, day)), seen_filter_file(root, day))


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    folder = tmp_path_factory.mktemp("https_days")
    with TlsWeb(folder) as web:
        settings = dataclasses.replace(
            settings_for(folder / "data"), shard_count=1, default_delay_s=0.02, max_attempts=1,
            connect_timeout_s=0.6, fetch_timeout_s=1.5, **web.settings_overrides())
        write_seeds(settings.data_root, ["https://valid.tls.test/"])
        hits = []
        for day in DAYS:
            crawl_day(settings, day)
            hits.append(list(web.hits))
            web.hits.clear()
    return settings, hits


def query(settings, sql: str) -> list[tuple]:
    return duckdb.sql(sql.format(root=settings.data_root)).fetchall()


def test_the_registry_keeps_one_url_per_page_and_the_second_day_asks_only_https(days):
    settings, (first, second) = days
    # Day one asked http once per host before it knew (a 301; the hsts host's http page, before its home said HSTS).
    assert {(hit.host, hit.scheme) for hit in first} >= {("moved.tls.test", "http"), ("moved.tls.test", "https"),
                                                         ("hsts.tls.test", "https")}
    registry = [url for (url,) in query(settings, f"SELECT url FROM '{url_registry_file(settings.data_root, DAYS[0])}'")]
    assert not [url for url in registry if url.startswith(MOVED_OR_HSTS)]
    assert {"https://moved.tls.test/x.html", "https://moved.tls.test/y.html", "https://moved.tls.test/z.html",
            "https://hsts.tls.test/h1.html", "https://hsts.tls.test/h2.html"} <= set(registry)
    frontier = [url for (url,) in query(settings, f"SELECT url FROM '{frontier_file(settings.data_root, DAYS[1], 's00')}'")]
    assert "https://moved.tls.test/x.html" in frontier and not [u for u in frontier if u.startswith(MOVED_OR_HSTS)]
    assert not [hit for hit in second if hit.host in ("moved.tls.test", "hsts.tls.test") and hit.scheme == "http"]
    assert {hit.path for hit in second if hit.host == "moved.tls.test"} == {"/robots.txt", "/x.html", "/y.html", "/z.html"}


def test_the_fetch_log_keeps_what_hsts_said_and_links_are_known_under_their_https_url(days):
    settings, _ = days
    root = settings.data_root
    hsts = dict(query(settings, f"SELECT url, hsts FROM '{fetch_log_file(root, DAYS[0], 's00')}' WHERE hsts IS NOT NULL"))
    assert hsts and set(hsts.values()) == {True} and all(url.startswith("https://hsts.tls.test/") for url in hsts)
    # Day two's links to pages day one fetched over https are not new, whichever scheme they were written in.
    links = dict(query(settings, f"SELECT target, is_new FROM '{links_file(root, DAYS[1], 's00')}' "
                                 "WHERE target_host IN ('moved.tls.test', 'hsts.tls.test')"))
    assert links and not any(links.values()) and not [t for t in links if t.startswith("http://")]


def test_the_day_report_counts_the_tls_failures_by_name(days):
    settings, _ = days
    report = day_report(settings.data_root, DAYS[0], settings.shard_keys())
    assert report.tls_failures == {StatusClass.TLS_CERTIFICATE_EXPIRED: 1, StatusClass.TLS_NAME_MISMATCH: 1,
                                   StatusClass.TLS_UNTRUSTED: 1, StatusClass.TLS_HANDSHAKE_TIMEOUT: 1,
                                   StatusClass.TLS_PROTOCOL_ERROR: 1}
    assert report.status_classes[StatusClass.CONNECT_TIMEOUT] == 1  # not a TLS failure: no connection
    assert "5 URLs lost to TLS failures (" in summary_markdown(report)


def test_a_plan_that_names_both_forms_of_a_page_gives_the_frontier_its_https_url_once(tmp_path):
    """A plan made before its host was known for https (or from fetch logs of both forms)."""
    settings = settings_for(tmp_path)
    write_seeds(tmp_path, ["http://s.test/", "http://other.test/"])
    write_links(tmp_path, "2026-11-28", [("http://s.test/", "http://s.test/p", 1), ("http://s.test/", "https://s.test/p", 1),
                                         ("http://s.test/", "http://other.test/q", 1)])
    # s.test answered its http home with a 301 to the https twin: known for https from then on.
    write_fetch_log(tmp_path, "2026-11-28", [
        fetch_row("http://s.test/", "2026-11-28T01:00:00", status=301, status_class="redirect",
                  redirect_to="https://s.test/"),
        fetch_row("http://other.test/", "2026-11-28T01:00:00", status=301, status_class="redirect",
                  redirect_to="https://www.other.test/")])  # another host: not its twin
    plan = pa.table({"url": ["http://s.test/p", "https://s.test/p", "http://s.test/", "http://other.test/q",
                             "http://other.test/"],
                     "planned": [True, True, True, True, False], "plan_rank": pa.array([3, 1, 2, 4, None], pa.int64()),
                     "level": pa.array([2, 1, 1, 3, None], pa.int32())})
    result = build_frontier(settings, history_before(tmp_path, "2026-11-29"), plan)
    rows = list(zip(*(result.table.column(c).to_pylist() for c in ("url", "priority"))))
    assert rows == [("https://s.test/p", 1), ("https://s.test/", 1), ("http://other.test/q", 3)]
