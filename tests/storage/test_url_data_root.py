"""Files under a URL data root (fsspec's memory:// store here; tests/storage/test_shared_root.py crawls
into S3): Parquet is put whole at its final name and read back by pyarrow and DuckDB's glob,
and a fetch batch's WARC folder is uploaded without its checkpoint or open files, an earlier
attempt's WARC files moved aside as the local step does."""

import uuid
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from crawl_assets.analyst.sql import main as sql_main
from crawl_assets.crawler.crawl_errors import CrawlInputError
from crawl_assets.crawler.settings import CrawlSettings
from crawl_assets.pipeline.catalog_step import build_catalog
from crawl_assets.pipeline.change_stats.change_stats_step import change_stats
from crawl_assets.pipeline.change_stats.url_change_state import read_change_stats
from crawl_assets.pipeline.fetch_step import CHECKPOINT_DIR, SUPERSEDED_DIR
from crawl_assets.pipeline.recrawl_inputs import change_stats_sources
from crawl_assets.pipeline.archive.warc_upload import local_warc_dir, publish_warc_dir
from crawl_assets.storage.layout import fetch_log_file, glob_of, shard_files, warc_dir, write_parquet_atomic
from crawl_assets.storage.shared_root import (connect, data_root_path, forget_remote_roots, is_remote, query_connection,
                                              read_table)

DAY = "2026-11-28"


@pytest.fixture
def root():
    path = data_root_path(f"memory://test-{uuid.uuid4().hex}/data", Path("/"))
    yield path
    if path.fs.exists(path.path):
        path.fs.rm(path.path, recursive=True)
    forget_remote_roots()


def files_under(root) -> set[str]:
    return {name.removeprefix(root.path + "/") for name in root.fs.find(root.path)}


def test_a_url_root_gives_upaths_and_a_folder_stays_a_path(root, tmp_path):
    assert is_remote(root) and is_remote(fetch_log_file(root, DAY, "s00"))
    assert str(fetch_log_file(root, DAY, "s00")).startswith("memory://")
    local = data_root_path("data", tmp_path)
    assert local == tmp_path / "data" and not is_remote(local)


def test_parquet_lands_whole_and_duckdb_globs_it_through_the_root(root):
    for shard, urls in (("s00", ["http://a.test/"]), ("s01", ["http://b.test/", "http://b.test/x"])):
        write_parquet_atomic(pa.table({"url": urls}), fetch_log_file(root, DAY, shard))
    assert files_under(root) == {f"fetch_log/date={DAY}/shard=s00/fetch_log.parquet",
                                 f"fetch_log/date={DAY}/shard=s01/fetch_log.parquet"}  # no .tmp left
    assert read_table(fetch_log_file(root, DAY, "s01")).column("url").to_pylist() == ["http://b.test/", "http://b.test/x"]
    assert read_table(list(shard_files(root, "fetch_log", through=DAY))).num_rows == 3
    rows = connect().execute(f"SELECT shard, url FROM read_parquet('{glob_of(root, 'fetch_log')}', "
                             "hive_partitioning = true) ORDER BY url").fetchall()
    assert rows == [("s00", "http://a.test/"), ("s01", "http://b.test/"), ("s01", "http://b.test/x")]


def test_query_connections_share_a_database_but_not_their_tables_and_read_every_root_opened(root):
    write_parquet_atomic(pa.table({"url": ["http://a.test/"]}), fetch_log_file(root, DAY, "s00"))
    first, second = query_connection(), query_connection()
    first.execute("CREATE TEMP TABLE mine AS SELECT 1 AS n")
    first.register("registered", pa.table({"n": [2]}))
    for name in ("mine", "registered"):
        with pytest.raises(duckdb.CatalogException):
            second.execute(f"SELECT * FROM {name}")
    # A root opened after the shared database was made is read through its file system too, and
    # one opened after forget_remote_roots (a new server under the same scheme) as well.
    later = data_root_path(f"memory://test-{uuid.uuid4().hex}/data", Path("/"))
    write_parquet_atomic(pa.table({"url": ["http://b.test/"]}), fetch_log_file(later, DAY, "s00"))
    query = "SELECT url FROM read_parquet($f)"
    assert query_connection().execute(query, {"f": str(fetch_log_file(later, DAY, "s00"))}).fetchall() == [
        ("http://b.test/",)]
    forget_remote_roots()
    again = data_root_path(str(root), Path("/"))
    assert query_connection().execute(query, {"f": str(fetch_log_file(again, DAY, "s00"))}).fetchall() == [
        ("http://a.test/",)]


def test_a_batch_folder_is_uploaded_without_its_checkpoint_and_earlier_attempts_move_aside(root, tmp_path):
    folder = warc_dir(root, DAY, "s00")
    # An earlier attempt on another worker uploaded its files before its fetch log was written.
    (folder / "old-00000.warc.gz").write_bytes(b"old warc")
    (folder / "old-00000.cdxj").write_bytes(b"old index")
    settings = type("Settings", (), {"work_dir": tmp_path / "work", "data_root": root})()
    local = local_warc_dir(settings, folder)
    assert local == tmp_path / "work" / "warc" / f"date={DAY}" / "shard=s00"
    (local / CHECKPOINT_DIR).mkdir(parents=True)
    (local / CHECKPOINT_DIR / "state.json").write_text("{}")
    (local / "new-00001.warc.gz.open").write_bytes(b"being written")
    for name, data in (("new-00000.warc.gz", b"new warc"), ("new-00000.cdxj", b"new index"),
                       ("new-00000.parquet", b"new captures")):
        (local / name).write_bytes(data)

    publish_warc_dir(local, folder)

    prefix = f"warc/date={DAY}/shard=s00/"
    assert files_under(root) == {prefix + name for name in (
        "new-00000.warc.gz", "new-00000.cdxj", "new-00000.parquet", f"{SUPERSEDED_DIR}/old-00000.warc.gz")}
    assert (folder / "new-00000.warc.gz").read_bytes() == b"new warc"
    assert (folder / SUPERSEDED_DIR / "old-00000.warc.gz").read_bytes() == b"old warc"


def test_a_work_dir_this_machine_cannot_write_is_named_before_anything_is_fetched(root, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    settings = type("Settings", (), {"work_dir": blocker / "work", "data_root": root})()
    with pytest.raises(CrawlInputError, match=rf"cannot create the local folder {blocker}/work/warc/.*set work_dir"):
        local_warc_dir(settings, warc_dir(root, DAY, "s00"))
    with pytest.raises(CrawlInputError, match=rf"cannot create the local folder {blocker}/work .*set work_dir"):
        build_catalog(root, blocker / "work" / "crawl.duckdb")


def test_the_sql_command_reads_a_url_root_with_any_catalog(root, tmp_path, monkeypatch, capsys):
    # A fresh process knows no root's file system until it reads the settings, --catalog or not.
    write_parquet_atomic(pa.table({"url": ["http://a.test/", "http://b.test/"]}), fetch_log_file(root, DAY, "s00"))
    forget_remote_roots()
    settings = tmp_path / "remote.toml"
    settings.write_text(f'[crawl]\ndata_root = "{root}"\nwork_dir = "{tmp_path / "work"}"\n')
    monkeypatch.setenv("RECRAWL_SETTINGS", str(settings))
    catalog = tmp_path / "copy.duckdb"
    duckdb.connect(str(catalog)).close()
    query = f"SELECT count(*) AS urls FROM read_parquet('{glob_of(root, 'fetch_log')}')"
    assert sql_main(["--catalog", str(catalog), query]) == 0
    assert "│     2 │" in capsys.readouterr().out


def test_change_stats_state_files_live_under_a_url_root(root):
    """The first day writes a base, the next a delta of its URLs; both are read back through
    the root's file system, the delta's row winning."""
    from crawl_files import fetch_row, write_fetch_log

    write_fetch_log(root, "2026-11-28", [fetch_row("http://a.test/", "2026-11-28T10:00:00", payload_digest="1"),
                                         fetch_row("http://a.test/p", "2026-11-28T10:00:00")])
    write_fetch_log(root, "2026-11-29", [fetch_row("http://a.test/", "2026-11-29T10:00:00", payload_digest="2")])
    for day in ("2026-11-28", "2026-11-29"):
        sources = change_stats_sources(root, day)
        stats = change_stats([str(p) for p in sources.fetch_logs], day, CrawlSettings(), previous=sources.previous,
                             state_root=root)
    assert is_remote(stats.state.base) and len(stats.state.deltas) == 1
    assert {"change_stats/date=2026-11-28/url_state_base.parquet", "change_stats/date=2026-11-29/url_state_delta.parquet",
            "change_stats/date=2026-11-29/pattern_priors.parquet"} <= files_under(root)
    rows = read_change_stats(root, "2026-11-29").select(["url", "visits", "intervals"]).to_pylist()
    assert rows == [{"url": "http://a.test/", "visits": 2, "intervals": 1}, {"url": "http://a.test/p", "visits": 1,
                                                                            "intervals": 0}]
