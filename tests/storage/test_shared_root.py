"""Crawl days written to an object store: the same two days of the demo web crawled twice
through the Dagster assets (run_cycle: frontier, two shards' fetch batches, the day's close),
once to a local data root and once to s3:// on moto's S3 server (loopback, an ephemeral port,
stopped at the end). The second day reads the first from the root (seen filter, archived
payloads, recrawl plan, the previous day's close). Every output lands in the bucket, nothing
but the work folder's files is written locally, and the catalog answers the same rows."""

import logging
import re
from threading import Thread

import duckdb
import pytest
import s3fs
from dagster import DagsterInstance
from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app  # moto[server]: dev extra
from warcio.archiveiterator import ArchiveIterator
from werkzeug.serving import make_server

from crawl_assets.analyst.captures import Captures, read_record
from crawl_assets.cli.cycle import run_cycle
from crawl_assets.crawler.url_policy.sharding import shard_key, shard_of
from crawl_assets.crawler.url_policy.urls import host_of
from crawl_assets.defs.resources import CrawlSettingsResource
from crawl_assets.pipeline.seen_filter_files import read_seen_filter
from crawl_assets.storage.layout import seen_filter_file, warc_dir
from crawl_assets.storage.shared_root import connect, forget_remote_roots

from support import DemoWebProcess, write_test_settings


DAYS = ("2026-11-28", "2026-11-29")
pytestmark = pytest.mark.timeout(600)  # four crawl days through Dagster: 150 s at load average 5
BUCKET = "crawl"

# Columns that do not depend on when or under which run the day was crawled.
SAME_ROWS = {
    "fetches": "SELECT CAST(date AS VARCHAR), url, host, shard, status, status_class, warc_type, payload_digest, etag, "
               "refers_to FROM fetches",
    "pages": "SELECT url, status, bytes, etag, content_type, last_status_class FROM pages",
    "links": "SELECT CAST(date AS VARCHAR), source, target, is_new, dropped_reason FROM links",
    "frontier": "SELECT CAST(date AS VARCHAR), url, host, shard FROM frontier",
    "urls": "SELECT url, first_seen, depth, discovered_from FROM urls",
    "seeds": "SELECT url FROM seeds",
    "captures": "SELECT urlkey, warc_type, digest FROM captures",
}


@pytest.fixture(scope="module")
def s3_endpoint():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per S3 request otherwise
    # moto's S3 alone: its ThreadedMotoServer works out the service of every request among all
    # of moto's, which cost more CPU than the S3 calls themselves.
    server = make_server("127.0.0.1", 0, create_backend_app("s3"), threaded=True, request_handler=MotoRequestHandler)
    thread = Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    with pytest.MonkeyPatch.context() as env:
        for name, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                            "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://{host}:{port}"}.items():
            env.setenv(name, value)
        s3fs.S3FileSystem.clear_instance_cache()
        s3fs.S3FileSystem().mkdir(BUCKET)
        try:
            yield f"http://{host}:{port}"
        finally:
            forget_remote_roots()
            s3fs.S3FileSystem.clear_instance_cache()
            server.shutdown()
            thread.join()


@pytest.fixture(scope="module")
def web():
    with DemoWebProcess(seed=11, hosts=6, pages_per_host=10) as server:
        yield server


def two_shards(web) -> list[str]:
    """The shards of the first seed hosts: two, so the day's outputs span shard folders."""
    shards = []
    for url in web.web.seed_urls():
        shard = shard_key(shard_of(host_of(url), 8))
        if shard not in shards:
            shards.append(shard)
    return shards[:2]


def crawl(folder, web, data_root: str | None = None) -> CrawlSettingsResource:
    resource = write_test_settings(folder, web.web, extra=f'work_dir = "{folder / "work"}"\n', seed_hosts=4)
    if data_root:
        resource = CrawlSettingsResource(settings_files=resource.settings_files, data_root=data_root,
                                         seeds_dir=resource.seeds_dir)
    with DagsterInstance.ephemeral() as instance:
        for day in DAYS:
            run_cycle(day, instance, resource, shards=two_shards(web))
    return resource


def same_name(path: str) -> str:
    """A WARC file's name carries its run's id: the two crawls' files differ only there."""
    return re.sub(r"-[0-9a-f]{8}-(\d{5})\.", r"-RUN-\1.", path)


def catalog_rows(con) -> dict[str, list[tuple]]:
    return {view: sorted(con.execute(sql).fetchall(), key=repr) for view, sql in SAME_ROWS.items()}


@pytest.fixture(scope="module")
def both_runs(web, s3_endpoint, tmp_path_factory):
    local = crawl(tmp_path_factory.mktemp("local_root"), web).load()
    remote_folder = tmp_path_factory.mktemp("s3_root")
    remote = crawl(remote_folder, web, data_root=f"s3://{BUCKET}/recrawl").load()
    return local, remote, remote_folder


def test_the_catalog_over_s3_answers_the_same_rows_as_over_a_local_root(both_runs):
    local, remote, _ = both_runs
    with duckdb.connect(str(local.catalog_path), read_only=True) as con:
        expected = catalog_rows(con)
    assert len(expected["fetches"]) > 20 and expected["captures"] and expected["urls"]
    # Day two asked again conditionally (304s, revisit records): it read day one from the root.
    assert any(row[0] == DAYS[1] and row[5] == "not_modified" and row[6] == "revisit" for row in expected["fetches"])
    # The remote catalog's views read s3:// globs through the registered s3fs file system.
    with connect(str(remote.catalog_path), read_only=True) as con:
        views = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'fetches'").fetchone()[0]
        assert f"s3://{BUCKET}/recrawl/fetch_log/" in views
        assert catalog_rows(con) == expected


def test_every_output_lies_in_the_bucket_and_only_work_files_locally(both_runs):
    local, remote, folder = both_runs
    fs = remote.data_root.fs
    in_bucket = {same_name(path.removeprefix(f"{BUCKET}/recrawl/")) for path in fs.find(f"{BUCKET}/recrawl")}
    on_disk = {same_name(str(path.relative_to(local.data_root)))
               for path in local.data_root.rglob("*") if path.is_file()}
    # The same files, but the catalog (a local DuckDB file, uploaded as a copy), the fetch
    # checkpoints and the archived-payload index (each machine's own: in the worker's work
    # folder under a URL root, pipeline/archive/payload_index.py).
    assert in_bucket == {p for p in on_disk if "/checkpoint/" not in p and not p.startswith("payload_index/")}
    assert any(p.startswith("payload_index/") for p in on_disk)
    assert "crawl.duckdb" in in_bucket and any(p.endswith(".warc.gz") for p in in_bucket)
    assert not any(p.endswith((".tmp", ".open")) for p in in_bucket)
    # Locally, only the work folder (the WARC files as written, checkpoints, the catalog, the
    # archived-payload index).
    assert not (folder / "data").exists()
    assert {p.name for p in (folder / "work").iterdir()} == {"warc", "crawl.duckdb", "payload_index"}
    assert any((folder / "work" / "payload_index").glob("before=*/keys"))


def test_the_warc_records_in_the_bucket_are_where_the_fetch_log_says(both_runs):
    _, remote, _ = both_runs
    with connect(str(remote.catalog_path), read_only=True) as con:
        rows = con.execute("SELECT url, CAST(date AS VARCHAR), shard, warc_file, warc_offset, warc_type "
                           "FROM fetches WHERE warc_file IS NOT NULL ORDER BY url, date").fetchall()
    assert {row[1] for row in rows} == set(DAYS)
    for url, day, shard, name, offset, kind in rows[::3]:
        with (warc_dir(remote.data_root, day, shard) / name).open("rb") as stream:
            stream.seek(offset)
            record = next(iter(ArchiveIterator(stream)))
            assert (record.rec_headers.get_header("WARC-Target-URI"), record.rec_type) == (url, kind)


def test_the_seen_filter_in_the_bucket_knows_the_day(both_runs):
    _, remote, _ = both_runs
    bloom = read_seen_filter(seen_filter_file(remote.data_root, DAYS[-1]))
    with connect(str(remote.catalog_path), read_only=True) as con:
        urls = [row[0] for row in con.execute("SELECT url FROM urls").fetchall()]
    assert urls and all(url in bloom for url in urls)


def test_capture_look_ups_read_the_records_from_the_bucket(both_runs, web):
    local, remote, _ = both_runs
    home = web.web.seed_urls()[0]
    with Captures(local.catalog_path) as here, Captures(remote.catalog_path, remote.data_root) as there:
        expected, found = here.captures_of(home), there.captures_of(home)
        assert len(found) == len(expected) == len(DAYS)  # a response, then a revisit
        assert all(str(c.path).startswith(f"s3://{BUCKET}/recrawl/warc/") for c in found)
        for mine, theirs in zip(expected, found):
            record, _ = read_record(theirs, remote.data_root)
            assert record.rec_headers.get_header("WARC-Target-URI") == home
            assert (theirs.warc_type, theirs.digest) == (mine.warc_type, mine.digest)
        served, served_here = there.capture(home, DAYS[-1]), here.capture(home, DAYS[-1])
        assert served.status == served_here.status == 200 and served.body == served_here.body
