"""The catalog step without Dagster: views over the Parquet outputs, row counts, and builds
that never show a half-built catalog or collide."""

import threading

import duckdb
import pyarrow as pa

from crawl_assets.layout import url_registry_file, write_parquet_atomic
from crawl_assets.pipeline.catalog_step import build_catalog
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
