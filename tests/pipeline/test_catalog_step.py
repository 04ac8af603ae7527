"""The catalog step without Dagster: views over the Parquet outputs, row counts, and builds
that never show a half-built catalog or collide."""

import threading

import duckdb
import pyarrow as pa

from crawl_assets.crawler.settings import CrawlSettings
from crawl_assets.pipeline.catalog_step import build_catalog
from crawl_assets.pipeline.change_stats.change_stats_step import change_stats
from crawl_assets.pipeline.recrawl_inputs import change_stats_sources
from crawl_assets.storage.layout import url_registry_file, write_parquet_atomic
from crawl_files import fetch_row, write_fetch_log, write_links, write_seeds


def write_outputs(root):
    write_seeds(root, ["http://a.test/"])
    write_fetch_log(root, "2026-11-28", [fetch_row("http://a.test/", "2026-11-28T10:00:00", etag='"1"'),
                                         fetch_row("http://a.test/p", "2026-11-28T10:00:00")])
    write_fetch_log(root, "2026-11-29", [
        fetch_row("http://a.test/", "2026-11-29T10:00:00", status=304, status_class="not_modified")], shard="s01")
    write_links(root, "2026-11-28", [("http://a.test/", "http://a.test/p", 1)])
    for day, urls in (("2026-11-28", ["http://a.test/"]), ("2026-11-29", ["http://a.test/", "http://a.test/p"])):
        write_parquet_atomic(pa.table({"url": urls}), url_registry_file(root, day))


def test_the_catalog_has_a_view_per_output_with_its_rows(tmp_path):
    write_outputs(tmp_path)
    result = build_catalog(tmp_path, tmp_path / "crawl.duckdb")
    assert dict(result.rows) == {"fetches": 3, "links": 1, "pages": 2, "seeds": 1, "urls": 2}
    with duckdb.connect(str(result.path), read_only=True) as con:
        # pages: the latest full answer; a 304 only moves last_checked_at and last_status_class.
        page = con.execute("SELECT etag, status_class, last_status_class, last_checked_at::VARCHAR "
                           "FROM pages WHERE url = 'http://a.test/'").fetchone()
        assert page == ('"1"', "ok", "not_modified", "2026-11-29 10:00:00+00")
        assert con.execute("SELECT count(*) FROM urls").fetchone()[0] == 2  # the newest day only
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("crawl.duckdb")] == ["crawl.duckdb"]


def test_builds_at_the_same_time_do_not_collide(tmp_path):
    write_outputs(tmp_path)
    errors = []

    def build():
        try:
            build_catalog(tmp_path, tmp_path / "crawl.duckdb")
        except Exception as exc:  # noqa: BLE001 (collected and asserted below)
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with duckdb.connect(str(tmp_path / "crawl.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM fetches").fetchone()[0] == 3
    assert not list(tmp_path.glob("*.tmp"))


def test_analysts_query_the_newest_days_change_stats(tmp_path):
    """The change_stats view: every URL's rates from the newest day's state files (a base and
    a delta here), under the columns the step returns."""
    write_outputs(tmp_path)
    for day in ("2026-11-28", "2026-11-29"):
        sources = change_stats_sources(tmp_path, day)
        stats = change_stats([str(p) for p in sources.fetch_logs], day, CrawlSettings(), previous=sources.previous,
                             state_root=tmp_path)
    assert len(stats.state.deltas) == 1
    rebuilt = change_stats(str(tmp_path / "fetch_log" / "*" / "*" / "*.parquet"), "2026-11-29", CrawlSettings()).urls
    result = build_catalog(tmp_path, tmp_path / "crawl.duckdb")
    assert result.rows["change_stats"] == 2
    with duckdb.connect(str(result.path), read_only=True) as con:
        rows = con.execute("SELECT url, visits, not_modified, change_rate FROM change_stats ORDER BY url").fetchall()
        assert [c[0] for c in con.execute("DESCRIBE change_stats").fetchall()] == rebuilt.column_names
    assert rows == [(r["url"], r["visits"], r["not_modified"], r["change_rate"])
                    for r in rebuilt.select(["url", "visits", "not_modified", "change_rate"]).to_pylist()]
    assert [r[:3] for r in rows] == [("http://a.test/", 2, 1), ("http://a.test/p", 1, 0)]
