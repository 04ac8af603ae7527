"""Every WARC file of a crawl has a CDXJ index equal, line for line, to `cdxj-indexer --sort`'s,
a Parquet index with the same rows, and the catalog's captures view over them; a 304 revisit
carries what replay needs to find the payload."""

import io
import json
import subprocess
import sys

import duckdb
import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl_assets.crawler.archive.warc_index import index_paths

from conftest import DAY1, DAY2


def test_our_cdxj_is_cdxj_indexers_line_for_line(two_day_crawl):
    warcs = two_day_crawl.warcs()
    assert len(warcs) >= 4
    for warc in warcs:
        theirs = subprocess.run([sys.executable, "-m", "cdxj_indexer.main", "--sort", str(warc)],
                                capture_output=True, text=True, check=True, timeout=120).stdout
        ours = index_paths(warc)[0].read_text()
        assert ours.splitlines() and ours.splitlines() == theirs.splitlines()


def indexed_records(warc):
    """(url, offset, length, payload digest) of every record a capture index must hold (response,
    revisit, resource, metadata but warc-fields), read from the file itself with warcio."""
    records = []
    with open(warc, "rb") as fh:
        it = ArchiveIterator(fh)
        for record in it:
            if record.rec_type not in ("response", "revisit", "resource", "metadata"):
                continue
            if record.rec_type == "metadata" and record.rec_headers.get_header("Content-Type") == "application/warc-fields":
                continue
            headers = record.rec_headers
            records.append((headers.get_header("WARC-Target-URI"), it.get_record_offset(), it.get_record_length(),
                            headers.get_header("WARC-Payload-Digest")))
    return records


def test_the_parquet_index_holds_the_cdxj_rows(two_day_crawl):
    # Both days wrote WARC files, each with its two indexes beside it.
    warcs = two_day_crawl.warcs()
    assert two_day_crawl.warcs(DAY1) and two_day_crawl.warcs(DAY2)
    assert set(warcs) == set(two_day_crawl.warcs(DAY1)) | set(two_day_crawl.warcs(DAY2))
    total = 0
    for warc in warcs:
        cdxj, parquet = index_paths(warc)
        lines = [line.split(" ", 2) for line in cdxj.read_text().splitlines()]
        rows = pq.read_table(parquet).to_pylist()
        assert [(r["urlkey"], r["timestamp"], r["url"], r["offset"], r["length"], r["digest"]) for r in rows] == [
            (key, ts, j["url"], int(j["offset"]), int(j["length"]), j.get("digest"))
            for key, ts, j in ((k, t, json.loads(body)) for k, t, body in lines)]
        # The index holds every record of the file, where it lies, and nothing else.
        records = indexed_records(warc)
        assert records and sorted((r["url"], r["offset"], r["length"], r["digest"]) for r in rows) == sorted(records)
        assert all(r["filename"] == warc.name for r in rows)
        total += len(records)
    # Every page fetched with an answer on either day is one of those records.
    con = duckdb.connect()
    logged = con.execute(f"SELECT count(*) FROM read_parquet('{two_day_crawl.root}/fetch_log/date=*/shard=*/*.parquet') "
                         "WHERE warc_file IS NOT NULL").fetchone()[0]
    assert total == logged > 100


def test_the_captures_view_locates_every_fetch_log_record(two_day_crawl):
    con = duckdb.connect(str(two_day_crawl.settings.catalog_path), read_only=True)
    missing = con.execute("""
        SELECT f.url, f.warc_file FROM fetches AS f
        LEFT JOIN captures AS c ON c.filename = f.warc_file AND c."offset" = f.warc_offset
             AND c.length = f.warc_length AND c.url = f.url
        WHERE f.warc_file IS NOT NULL AND c.url IS NULL""").fetchall()
    assert missing == []
    logged = con.execute("SELECT count(*) FROM fetches WHERE warc_file IS NOT NULL").fetchone()[0]
    assert con.execute("SELECT count(*) FROM captures").fetchone()[0] == logged > 100


def read_at(path, offset, length):
    with open(path, "rb") as fh:
        fh.seek(offset)
        return next(iter(ArchiveIterator(io.BytesIO(fh.read(length)))))


def test_a_304_revisit_has_no_http_block_and_names_the_record_holding_the_payload(two_day_crawl):
    con = duckdb.connect(str(two_day_crawl.settings.catalog_path), read_only=True)
    rows = con.execute("""
        SELECT r.date, r.shard, r.filename, r."offset", r.length, r.digest, r.refers_to_uri, r.refers_to_date,
               o.url, o.captured_at, o.warc_type, o.digest
        FROM captures AS r LEFT JOIN captures AS o
          ON o.url = r.refers_to_uri AND o.captured_at = r.refers_to_date
        WHERE r.date = ? AND r.profile LIKE '%/server-not-modified'""", [DAY2]).fetchall()
    assert len(rows) > 20
    for date, shard, name, offset, length, digest, uri, when, o_url, o_when, o_type, o_digest in rows:
        # The original is a full response record with the same payload digest.
        assert (o_url, o_type) == (uri, "response") and digest and digest == o_digest
        record = read_at(two_day_crawl.root / "warc" / f"date={date}" / f"shard={shard}" / name, offset, length)
        assert record.rec_type == "revisit" and record.http_headers is None
        assert record.rec_headers.get_header("WARC-Payload-Digest") == digest


@pytest.mark.parametrize("kind", ["identical-payload-digest"])
def test_identical_payload_revisits_keep_their_http_headers(two_day_crawl, kind):
    con = duckdb.connect(str(two_day_crawl.settings.catalog_path), read_only=True)
    rows = con.execute("SELECT status, mime, digest FROM captures WHERE profile LIKE ?", [f"%/{kind}"]).fetchall()
    assert rows and all(status == 200 and mime == "warc/revisit" and digest for status, mime, digest in rows)
