"""Sitemap <lastmod> and feed entries: recorded by the fetch step from what it archived, judged
per host (a host whose dates always say "now" is not believed), and read by change_stats as
evidence of a change between two visits."""

from datetime import datetime, timedelta, timezone
from io import BytesIO
from urllib.parse import urlsplit

import duckdb
import pyarrow as pa
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawl_assets.crawler.batches.arrow_schemas import FRONTIER_SCHEMA
from crawl_assets.pipeline.change_stats.change_evidence import (
    CHANGE_EVIDENCE_SCHEMA,
    evidence_of_batch,
    trusted_change_evidence,
    untrusted_hosts,
)
from crawl_assets.pipeline.change_stats.change_stats_step import change_stats
from crawl_assets.pipeline.fetch_step import FetchInputs, run_fetch_step
from crawl_assets.pipeline.recrawl_inputs import change_stats_inputs
from crawl_assets.storage.layout import change_evidence_file, write_parquet_atomic
from demoweb import DemoWeb, DemoWebThread
from demoweb.ordinary.change_model import moment
from crawl_files import fetch_row, settings_for, shard_for, write_fetch_log
from support import write_test_settings

RSS_HOST, ATOM_HOST = 1, 3  # host_traits.feed_path: RSS linked from the home page, Atom in robots.txt


@pytest.fixture(scope="module")
def demo_web():
    with DemoWebThread(DemoWeb(seed=3, hosts=4, pages_per_host=6, day=40), port=0) as web:
        yield web.web


def fetch_host(tmp_path, web, host_index):
    settings = write_test_settings(tmp_path, web).load()
    host = web.hostname(host_index)
    frontier = pa.Table.from_pylist([{"url": web.base_url(host_index) + "/", "host": host, "depth": 0,
                                      "priority": 1}], schema=FRONTIER_SCHEMA)
    return run_fetch_step(settings, shard_for(host, settings), FetchInputs(frontier),
                          tmp_path / f"warc{host_index}", "evidence")


@pytest.mark.parametrize("host_index, feed_kind, feed_path", [(RSS_HOST, "rss", "/feed.rss"),
                                                              (ATOM_HOST, "atom", "/feed.atom")])
def test_the_fetch_step_records_every_dated_sitemap_and_feed_entry(tmp_path, demo_web, host_index,
                                                                   feed_kind, feed_path):
    result = fetch_host(tmp_path, demo_web, host_index)
    fetched = {r["url"]: r for r in result.fetch_log.to_pylist()}
    base = demo_web.base_url(host_index)
    feed_url = base + feed_path
    assert feed_url in fetched and base + "/sitemap.xml" in fetched  # both found and fetched
    rows = [r for r in result.change_evidence.to_pylist() if r["source"].startswith(base + "/")]
    by_source = {}  # (other hosts of the shard, linked from this one, may be fetched too)
    for row in rows:
        by_source.setdefault((row["source"], row["source_kind"]), []).append(row)
    assert set(by_source) == {(base + "/sitemap.xml", "sitemap"), (feed_url, feed_kind)}
    # The sitemap dates every page with its true last content change.
    sitemap = {r["url"]: r for r in by_source[(base + "/sitemap.xml", "sitemap")]}
    assert sorted(sitemap) == sorted(demo_web.page_urls(host_index))
    for url, row in sitemap.items():
        last = demo_web.page_state(host_index, urlsplit(url).path).last_change
        assert abs(row["lastmod"] - moment(last or 0.0)) < timedelta(seconds=1), url
        assert row["observed_at"] == fetched[base + "/sitemap.xml"]["fetched_at"]
        assert row["host"] == demo_web.hostname(host_index)
    # The feed lists the changed pages, with the same dates.
    feed = by_source[(feed_url, feed_kind)]
    assert feed and all(abs(r["lastmod"] - sitemap[r["url"]]["lastmod"]) < timedelta(seconds=1) for r in feed)


START = datetime(2026, 3, 1, 6, tzinfo=timezone.utc)


def evidence_rows(host, lastmods_days, observed_day):
    """Dated sitemap entries of `host`'s pages /0, /1, ..., read on `observed_day`."""
    observed = START + timedelta(days=observed_day)
    return [{"url": f"http://{host}/{i}", "host": host, "lastmod": START + timedelta(days=d),
             "source": f"http://{host}/sitemap.xml", "source_kind": "sitemap", "observed_at": observed}
            for i, d in enumerate(lastmods_days)]


def write_evidence(root, date, rows):
    write_parquet_atomic(pa.Table.from_pylist(rows, schema=CHANGE_EVIDENCE_SCHEMA),
                         change_evidence_file(root, date, "s00"))


def test_a_host_whose_dates_always_say_now_is_not_trusted(tmp_path):
    honest = evidence_rows("honest.test", [-30, -2, 0.5, 4.99, -100], observed_day=5)
    lying = evidence_rows("lying.test", [5] * 5, observed_day=5)  # every page "changed" as we read it
    few = evidence_rows("few.test", [5] * 2, observed_day=5)  # too few entries to judge
    table = pa.Table.from_pylist(honest + lying + few, schema=CHANGE_EVIDENCE_SCHEMA)
    assert untrusted_hosts(table) == ["lying.test"]
    # Read back over two days: the same entry read again counts once; the liar brings nothing.
    write_evidence(tmp_path, "2026-03-06", honest + lying + few)
    write_evidence(tmp_path, "2026-03-07", evidence_rows("honest.test", [-30], observed_day=6))
    evidence = trusted_change_evidence(tmp_path, "2026-03-07")
    assert sorted({u.split("/")[2] for u in evidence.column("url").to_pylist()}) == ["few.test", "honest.test"]
    assert evidence.num_rows == 7
    assert trusted_change_evidence(tmp_path, "2026-03-05") is None  # nothing recorded by then


def test_change_stats_counts_a_trusted_lastmod_between_two_visits_as_a_change(tmp_path):
    root, date = tmp_path, "2026-03-11"
    settings = settings_for(root)
    urls = ["http://honest.test/0", "http://lying.test/0"]
    # Each page visited twice, ten days apart, its content the same both times.
    write_fetch_log(root, "2026-03-01", [fetch_row(u, START, sha256="a", payload_digest="a", simhash=7) for u in urls])
    write_fetch_log(root, date, [fetch_row(u, START + timedelta(days=10), sha256="a", payload_digest="a", simhash=7)
                                 for u in urls])
    # Both sitemaps, read on day 5, say page 0 changed on day 4.9; the liar says so of every page.
    write_evidence(root, "2026-03-06", evidence_rows("honest.test", [4.9, -40, -50, -60, -70], observed_day=5)
                   + evidence_rows("lying.test", [5, 5, 5, 5, 5], observed_day=5))
    logs = [str(p) for p in change_stats_inputs(root, date)]
    without = {r["url"]: r for r in change_stats(logs, date, settings).urls.to_pylist()}
    evidence = trusted_change_evidence(root, date)
    with_evidence = {r["url"]: r for r in change_stats(logs, date, settings, lastmod_evidence=evidence).urls.to_pylist()}
    honest, lying = urls
    assert without[honest]["changes"] == 0 and with_evidence[honest]["changes"] == 1
    assert with_evidence[honest]["change_rate"] > without[honest]["change_rate"]
    assert with_evidence[lying]["changes"] == 0  # "now" on every page is no evidence ...
    believed = pa.table({"url": [f"http://{h}/0" for h in ("honest.test", "lying.test")],
                         "lastmod": [START + timedelta(days=4.9), START + timedelta(days=5)]})
    gullible = {r["url"]: r for r in change_stats(logs, date, settings, lastmod_evidence=believed).urls.to_pylist()}
    assert gullible[lying]["changes"] == 1  # ... which it would be if the host were believed
    assert gullible[lying]["change_rate"] > with_evidence[lying]["change_rate"]


def test_the_catalog_shows_the_recorded_dates(tmp_path):
    from crawl_assets.pipeline.catalog_step import build_catalog

    write_evidence(tmp_path, "2026-03-06", evidence_rows("honest.test", [-30, -2, 4], observed_day=5))
    result = build_catalog(tmp_path, tmp_path / "crawl.duckdb")
    assert result.rows["change_evidence"] == 3
    with duckdb.connect(str(result.path), read_only=True) as con:
        assert con.execute("SELECT url, lastmod::VARCHAR, source_kind, date::VARCHAR, shard FROM change_evidence "
                           "ORDER BY lastmod DESC LIMIT 1").fetchone() == (
            "http://honest.test/2", "2026-03-05 06:00:00+00", "sitemap", "2026-03-06", "s00")


def test_a_host_whose_dates_our_visits_contradict_is_not_trusted(tmp_path):
    # Six pages per host, visited on days 0 and 2. honest.test's pages changed in between,
    # bump.test's did not, nor token.test's (only their CSRF token: the payload digest moved,
    # the change digest did not), yet all sitemaps (read on day 1.5) date every page on day 1.
    hosts = ("honest.test", "bump.test", "token.test")
    for day, offset in (("2026-03-01", 0), ("2026-03-03", 2)):
        rows = [fetch_row(f"http://{host}/{i}", START + timedelta(days=offset),
                          payload_digest=f"{i}-{offset if host != 'bump.test' else 0}",
                          change_digest=f"{i}-{offset if host == 'honest.test' else 0}")
                for host in hosts for i in range(6)]
        write_fetch_log(tmp_path, day, rows)
    rows = [row for host in hosts for row in evidence_rows(host, [1] * 6, observed_day=1.5)]
    write_evidence(tmp_path, "2026-03-02", rows)
    table = pa.Table.from_pylist(rows, schema=CHANGE_EVIDENCE_SCHEMA)
    assert untrusted_hosts(table) == []  # none says "now" ...
    logs = change_stats_inputs(tmp_path, "2026-03-03")
    assert untrusted_hosts(table, logs) == ["bump.test", "token.test"]  # ... but our visits contradict two
    evidence = trusted_change_evidence(tmp_path, "2026-03-03")
    assert {u.split("/")[2] for u in evidence.column("url").to_pylist()} == {"honest.test"}
    # Before the second visit nothing contradicts bump.test or token.test yet.
    assert evidence.num_rows == 6 and trusted_change_evidence(tmp_path, "2026-03-02").num_rows == 18


def test_only_the_last_thirty_days_of_visits_judge_a_host(tmp_path):
    from crawl_assets.pipeline.change_stats.change_evidence import LASTMOD_CHECK_DAYS

    for day, offset in (("2026-03-01", 0), ("2026-03-03", 2)):  # as above: bump.test's pages never changed
        write_fetch_log(tmp_path, day, [fetch_row(f"http://bump.test/{i}", START + timedelta(days=offset),
                                                  payload_digest="same") for i in range(6)])
    write_evidence(tmp_path, "2026-03-02", evidence_rows("bump.test", [1] * 6, observed_day=1.5))
    assert trusted_change_evidence(tmp_path, "2026-03-03").num_rows == 0
    later = (START + timedelta(days=2 + LASTMOD_CHECK_DAYS)).date().isoformat()
    assert trusted_change_evidence(tmp_path, later).num_rows == 6  # those visits are too old to count now


def test_the_demo_webs_lying_host_is_not_believed_once_two_visits_contradict_it(tmp_path):
    from crawl_assets.storage.layout import fetch_log_file, warc_dir

    # Mixed validators: host 9 stamps every <lastmod> with the web's "now" (host_traits.py).
    liar, honest = 9, 3
    web = DemoWeb(seed=3, hosts=10, pages_per_host=8, day=40)
    settings = write_test_settings(tmp_path, web).load()
    root = settings.data_root
    with DemoWebThread(web, port=0) as server:
        live = server.web
        by_shard = {}
        for index in (liar, honest):
            host = live.hostname(index)
            by_shard.setdefault(shard_for(host, settings), []).extend(
                {"url": u, "host": host, "depth": 0, "priority": 1}
                for u in live.page_urls(index) + [live.base_url(index) + "/sitemap.xml"])
        for day in (40, 41):
            server.set_day(day)
            date = moment(day).date().isoformat()
            for shard, rows in by_shard.items():
                frontier = pa.Table.from_pylist(rows, schema=FRONTIER_SCHEMA)
                result = run_fetch_step(settings, shard, FetchInputs(frontier), warc_dir(root, date, shard), f"d{day}")
                write_parquet_atomic(result.fetch_log, fetch_log_file(root, date, shard))
                write_parquet_atomic(result.change_evidence, change_evidence_file(root, date, shard))
        first, second = moment(40).date().isoformat(), moment(41).date().isoformat()
    hosts_of = lambda table: {host_of_url(u) for u in table.column("url").to_pylist()}  # noqa: E731
    # One visit cannot tell (its dates are hours old by the time we read them) ...
    assert hosts_of(trusted_change_evidence(root, first)) >= {live.hostname(liar), live.hostname(honest)}
    # ... the second shows the liar's "changed" pages unchanged; the honest host's dates held.
    believed = hosts_of(trusted_change_evidence(root, second))
    assert live.hostname(honest) in believed and live.hostname(liar) not in believed


def host_of_url(url):
    return urlsplit(url).hostname


def test_a_sitemap_weighs_as_much_as_the_pages_it_dates(tmp_path):
    from crawl_assets.pipeline.change_stats.change_evidence import weigh_listings

    write_evidence(tmp_path, "2026-03-06", evidence_rows("a.test", [-3, -2, -1, 0], observed_day=5))
    write_evidence(tmp_path, "2026-03-07", evidence_rows("a.test", [-3, -2, -1, 0, 1, 2], observed_day=6))
    known = pa.table({"url": ["http://a.test/0", "http://a.test/sitemap.xml"], "host": ["a.test", "a.test"],
                      "inlinks": pa.array([9, 1], pa.int64())})
    weighed = weigh_listings(known, tmp_path, "2026-03-07").to_pylist()
    assert [(r["url"], r["inlinks"]) for r in weighed] == [("http://a.test/0", 9), ("http://a.test/sitemap.xml", 6)]
    assert weigh_listings(known, tmp_path, "2026-03-06")["inlinks"].to_pylist() == [9, 4]


def test_a_document_dates_only_its_own_hosts_pages(tmp_path):
    """A sitemap or feed listing another host's pages gives their links, not their dates: they
    would make those pages due, or that host's own honest dates look like lies."""
    sitemap = ("<urlset>" + "".join(f"<url><loc>http://{host}/p</loc><lastmod>2026-03-01</lastmod></url>"
                                    for host in ("site.test", "www.site.test", "victim.test")) + "</urlset>").encode()
    with open(tmp_path / "a.warc.gz", "wb") as out:
        http = StatusAndHeaders("200 OK", [("Content-Type", "application/xml")], protocol="HTTP/1.1")
        WARCWriter(out, gzip=True).write_record(WARCWriter(BytesIO()).create_warc_record(
            "http://site.test/sitemap.xml", "response", payload=BytesIO(sitemap), http_headers=http))
    log = pa.Table.from_pylist([{
        "url": "http://site.test/sitemap.xml", "status_class": "ok", "warc_type": "response",
        "content_type": "application/xml", "fetched_at": START, "warc_file": "a.warc.gz", "warc_offset": 0,
        "warc_length": (tmp_path / "a.warc.gz").stat().st_size}])
    rows = evidence_of_batch(log, tmp_path, 1 << 20).to_pylist()
    assert [(r["url"], r["host"], r["lastmod"]) for r in rows] == [
        ("http://site.test/p", "site.test", datetime(2026, 3, 1, tzinfo=timezone.utc))]


def test_pages_a_trusted_sitemap_dates_after_our_copy_are_fetched_the_same_day(tmp_path, demo_web):
    """The batch reads the host's sitemap (the plan's only URL) and fetches the pages it dates
    after our copy the same day, within the allowance the day's budget leaves (one here)."""
    settings = write_test_settings(tmp_path, demo_web).load()
    host, base = demo_web.hostname(RSS_HOST), demo_web.base_url(RSS_HOST)
    pages = sorted(demo_web.page_urls(RSS_HOST))
    old, new = datetime(2000, 1, 1, tzinfo=timezone.utc), datetime(2100, 1, 1, tzinfo=timezone.utc)
    copies = {url: old if i < 3 else new for i, url in enumerate(pages)}  # three copies older than their dates
    frontier = pa.Table.from_pylist([{"url": base + "/sitemap.xml", "host": host, "depth": 1, "priority": 1}],
                                    schema=FRONTIER_SCHEMA)
    inputs = FetchInputs(frontier, follow_links=False, listed_copies=copies, same_day_allowance=1)
    result = run_fetch_step(settings, shard_for(host, settings), inputs, tmp_path / "warc", "dated")
    fetched = result.fetch_log.column("url").to_pylist()
    assert fetched[0] == base + "/sitemap.xml" and len(fetched) == 2 and fetched[1] in pages[:3]
    assert result.counts.listed_changes_same_day == 1
