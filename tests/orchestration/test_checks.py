"""The check logic behind the asset checks, on small outputs made to pass and made to fail."""

from datetime import datetime, timedelta, timezone
from io import BytesIO

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawl_assets.pipeline import checks_step

T0 = datetime(2026, 11, 20, 3, tzinfo=timezone.utc)


def log(rows):
    names = ["url", "host", "fetched_at", "duration_ms", "warc_type", "warc_file", "warc_offset"]
    return pa.Table.from_pylist([dict(zip(names, r)) for r in rows])


def test_politeness_names_the_host_asked_too_soon():
    rows = [(f"http://a.test/{i}", "a.test", T0 + timedelta(seconds=i), 5.0, None, None, None) for i in range(3)]
    rows += [("http://b.test/1", "b.test", T0, 5.0, None, None, None),
             ("http://b.test/2", "b.test", T0 + timedelta(seconds=0.2), 5.0, None, None, None),
             ("http://b.test/robots", "b.test", None, 0.0, None, None, None)]  # never fetched: no timing
    verdict = checks_step.politeness(log(rows), delay_s=0.5)
    assert not verdict.passed and verdict.failures == 1
    assert verdict.examples[0].startswith("b.test: http://b.test/2 started 0.2000 s")
    assert verdict.measured == 0.2
    assert checks_step.politeness(log(rows[:3]), delay_s=0.5).passed


def test_every_frontier_url_must_have_a_fetch_log_row():
    frontier = pa.table({"url": ["http://a.test/1", "http://a.test/2"]})
    fetched = log([("http://a.test/1", "a.test", T0, 1.0, None, None, None)])
    verdict = checks_step.frontier_accounted_for(frontier, fetched)
    assert (verdict.passed, verdict.examples) == (False, ("http://a.test/2",))


def test_warc_offsets_are_checked_with_warcio_and_fastwarc(tmp_path):
    buffer, offsets = BytesIO(), []
    writer = WARCWriter(buffer, gzip=True)
    for n in range(2):
        offsets.append(buffer.tell())
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(f"http://a.test/{n}", "response",
                                                      payload=BytesIO(b"<p>page</p>"), http_headers=http))
    (tmp_path / "a.warc.gz").write_bytes(buffer.getvalue())
    rows = [(f"http://a.test/{n}", "a.test", T0, 1.0, "response", "a.warc.gz", offsets[n]) for n in range(2)]
    assert checks_step.warc_records_match(log(rows), tmp_path).passed

    swapped = [rows[0][:6] + (offsets[1],), rows[1][:6] + (offsets[0],)]
    verdict = checks_step.warc_records_match(log(swapped), tmp_path)
    assert verdict.failures == 4  # both rows, in both readers' eyes
    assert {e.split(":")[0] for e in verdict.examples} == {"warcio", "fastwarc"}


def test_seen_filter_rate_within_target():
    assert checks_step.seen_filter_rate(0.0008, 0.001).passed
    # A filter at its target measures over it by chance: 104 of 100,000 URLs (a demo crawl's day) passes.
    assert checks_step.seen_filter_rate(0.00104, 0.001, 100_000).passed
    # Three standard errors over (0.0013 on 100,000 URLs) is a filter that is too full.
    assert not checks_step.seen_filter_rate(0.0014, 0.001, 100_000).passed
    assert not checks_step.seen_filter_rate(0.0012, 0.001, 1_000_000).passed


def test_catalog_rows_equal_the_files(tmp_path):
    folder = tmp_path / "fetch_log" / "date=2026-11-20" / "shard=s00"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"url": ["a", "b", "c"]}), folder / "fetch_log.parquet")
    glob = str(tmp_path / "fetch_log" / "date=*" / "shard=*" / "*.parquet")
    good, bad = tmp_path / "good.duckdb", tmp_path / "bad.duckdb"
    with duckdb.connect(str(good)) as con:
        con.execute(f"CREATE VIEW fetches AS SELECT * FROM read_parquet('{glob}')")
    with duckdb.connect(str(bad)) as con:
        con.execute(f"CREATE VIEW fetches AS SELECT * FROM read_parquet('{glob}') WHERE url <> 'a'")
    assert checks_step.catalog_row_counts(good, {"fetches": glob}).passed
    verdict = checks_step.catalog_row_counts(bad, {"fetches": glob})
    assert verdict.examples == ("fetches: 2 rows, its files hold 3",)


def test_warc_files_shorter_than_their_index_or_missing_are_named(tmp_path):
    index = tmp_path / "warc" / "date=2026-11-20" / "shard=s01"
    index.mkdir(parents=True)
    pq.write_table(pa.table({"filename": ["whole.warc.gz", "whole.warc.gz", "cut.warc.gz", "gone.warc.gz"],
                             "offset": [0, 60, 0, 0], "length": [60, 40, 120, 10]}), index / "index.parquet")
    (index / "whole.warc.gz").write_bytes(b"x" * 100)  # its last record ends at byte 100
    (index / "cut.warc.gz").write_bytes(b"x" * 119)
    catalog = tmp_path / "crawl.duckdb"
    with duckdb.connect(str(catalog)) as con:
        con.execute(f"CREATE VIEW captures AS SELECT * FROM read_parquet('{tmp_path}/warc/date=*/shard=*/*.parquet', "
                    "hive_partitioning = true)")
    verdict = checks_step.warc_files_whole(catalog, tmp_path)
    assert verdict.failures == 2
    cut, gone = verdict.examples
    assert cut.startswith(f"{index / 'cut.warc.gz'} is cut short (119 bytes), but its index has records up to byte 120: ")
    assert gone.startswith(f"{index / 'gone.warc.gz'} is missing, but its index has records up to byte 10: ")
    assert cut.endswith("the captures past the cut cannot be read; restore it from a copy, or fetch the shard again: "
                        "python -m crawl_assets.cli.cycle --date 2026-11-20 --shards s01 --refetch (in the UI: fetch_job "
                        "for 2026-11-20|s01 with the run tag recrawl/refetch=true), or record the loss and go on: run "
                        f"the cycle command again with --quarantine {index / 'cut.warc.gz'} (the file moves under "
                        f"{tmp_path / 'quarantine'}, its whole records stay readable in place, the lost ones are listed "
                        "in the catalog's lost_captures view)")
    (index / "cut.warc.gz").write_bytes(b"x" * 120)
    (index / "gone.warc.gz").write_bytes(b"x" * 10)
    assert checks_step.warc_files_whole(catalog, tmp_path).passed
    empty = tmp_path / "empty.duckdb"  # no fetch batch yet: no captures view
    duckdb.connect(str(empty)).close()
    assert checks_step.warc_files_whole(empty, tmp_path).passed
