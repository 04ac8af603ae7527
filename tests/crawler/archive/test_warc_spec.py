"""The WARC writer's records checked against WARC 1.1 (section 5's named fields, section 6's
record types) record by record, as two common readers read them: warcio (pywb's reader) and
FastWARC (resiliparse's), each checking the block digests. One file holds every record type
the crawler writes: warcinfo, response (whole and truncated), request, revisit (identical
payload and server-not-modified) and conversion (the render tier's DOM). The crawler writes no
metadata or resource records. No network."""

import re
from datetime import datetime, timezone

import pytest
from fastwarc.warc import ArchiveIterator as FastIterator
from warcio.archiveiterator import ArchiveIterator

from crawl_assets.crawler.archive.warc import (IDENTICAL_PAYLOAD, SERVER_NOT_MODIFIED, Exchange, Revisit,
                                               WarcFileWriter, payload_digest)
from support import assert_warcio_check_passes

WHEN = datetime(2026, 12, 1, 1, 2, 3, 456789, tzinfo=timezone.utc)
EARLIER = "2026-11-30T00:00:00.000000Z"
RECORD_ID = re.compile(r"<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}>\Z")
WARC_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\Z")


def exchange(path, status=200, reason="OK", body=b"<html>page</html>", truncated=False, headers=None):
    request_headers = [("Host", "a.test"), ("User-Agent", "recrawl-test"), ("Accept-Encoding", "gzip, zstd")]
    head = (f"GET {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in request_headers) + "\r\n").encode()
    return Exchange(f"https://a.test{path}", "192.0.2.9", WHEN, "GET", path, request_headers, "HTTP/1.1", status,
                    reason, headers if headers is not None else [("Content-Type", "text/html")], body, truncated,
                    request_head=head)


@pytest.fixture(scope="module")
def warc_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("warc_spec")
    page = exchange("/page")
    with WarcFileWriter(folder, "spec", "recrawl-test") as writer:
        writer.write(page, digest=payload_digest(page.body))
        response_id = writer.last_record_id
        writer.write(exchange("/cut", body=b"x" * 10, truncated=True))
        writer.write(exchange("/copy"), Revisit(IDENTICAL_PAYLOAD, "https://a.test/page", page.record_date),
                     payload_digest(page.body))
        writer.write(exchange("/page", status=304, reason="Not Modified", body=b"", headers=[("ETag", '"e1"')]),
                     Revisit(SERVER_NOT_MODIFIED, "https://a.test/page", EARLIER), payload_digest(page.body))
        writer.write_conversion("https://a.test/page", response_id, page.record_date, b"<html>rendered</html>")
    (path,) = writer.closed_files
    return path


def warcio_records(path):
    with open(path, "rb") as fh:
        return [(r.rec_headers, r.raw_stream.read()) for r in ArchiveIterator(fh, no_record_parse=True,
                                                                                 check_digests=True)]


def test_every_record_carries_what_warc_1_1_asks_of_its_type(warc_file):
    assert_warcio_check_passes(warc_file)
    records = warcio_records(warc_file)
    kinds = [h.get_header("WARC-Type") for h, _ in records]
    assert kinds == ["warcinfo", "response", "request", "response", "request", "revisit", "request", "revisit",
                     "request", "conversion"]
    ids = {h.get_header("WARC-Record-ID") for h, _ in records}
    assert len(ids) == len(records)
    warcinfo = records[0][0]
    assert warcinfo.get_header("WARC-Filename") == warc_file.name
    assert warcinfo.get_header("Content-Type") == "application/warc-fields"
    for headers, block in records:
        kind = headers.get_header("WARC-Type")
        assert headers.protocol == "WARC/1.1"
        assert RECORD_ID.match(headers.get_header("WARC-Record-ID")), kind
        assert WARC_DATE.match(headers.get_header("WARC-Date")), kind
        assert int(headers.get_header("Content-Length")) == len(block), kind
        if kind == "warcinfo":
            continue
        # Every record names its warcinfo, a target, and (but the DOM, which no server sent) the server's address.
        assert headers.get_header("WARC-Warcinfo-ID") == warcinfo.get_header("WARC-Record-ID"), kind
        assert headers.get_header("WARC-Target-URI").startswith("https://a.test/"), kind
        assert headers.get_header("WARC-Block-Digest"), kind
        if kind != "conversion":
            assert headers.get_header("WARC-IP-Address") == "192.0.2.9", kind
        if kind == "response":
            assert headers.get_header("Content-Type") == "application/http; msgtype=response"
            assert headers.get_header("WARC-Payload-Digest")
            assert block.startswith(b"HTTP/1.1 200 OK\r\n")
        if kind == "request":
            assert headers.get_header("Content-Type") == "application/http; msgtype=request"
            assert block.startswith(b"GET /") and block.split(b"\r\n", 1)[0].endswith(b" HTTP/1.1")
        if kind == "revisit":
            assert headers.get_header("WARC-Profile") in (IDENTICAL_PAYLOAD, SERVER_NOT_MODIFIED)
            assert headers.get_header("WARC-Refers-To-Target-URI") == "https://a.test/page"
            assert WARC_DATE.match(headers.get_header("WARC-Refers-To-Date"))
            assert headers.get_header("WARC-Payload-Digest") == payload_digest(b"<html>page</html>")
        if kind == "conversion":
            assert headers.get_header("WARC-Refers-To") == records[1][0].get_header("WARC-Record-ID")
    # Each request is concurrent to the response or revisit just before it.
    for (before, _), (request, _) in zip(records, records[1:]):
        if request.get_header("WARC-Type") == "request":
            assert request.get_header("WARC-Concurrent-To") == before.get_header("WARC-Record-ID")
    truncated = [h.get_header("WARC-Target-URI") for h, _ in records if h.get_header("WARC-Truncated")]
    assert truncated == ["https://a.test/cut"]
    assert [h.get_header("WARC-Truncated") for h, _ in records if h.get_header("WARC-Truncated")] == ["length"]


def test_the_request_block_is_the_request_as_sent(warc_file):
    requests = [block for headers, block in warcio_records(warc_file) if headers.get_header("WARC-Type") == "request"]
    assert requests[0] == exchange("/page").request_head
    assert requests[0].startswith(b"GET /page HTTP/1.1\r\nHost: a.test\r\n") and requests[0].endswith(b"\r\n\r\n")
    # warcio's own HTTP parse of it sees the method and the whole request line
    with open(warc_file, "rb") as fh:
        parsed = [r.http_headers for r in ArchiveIterator(fh) if r.rec_type == "request"][0]
    assert (parsed.protocol, parsed.statusline) == ("GET", "/page HTTP/1.1")
    assert parsed.get_header("Host") == "a.test"


def test_fastwarc_reads_the_same_records_and_verifies_their_digests(warc_file):
    warcio_view = [(h.get_header("WARC-Type"), h.get_header("WARC-Record-ID"), h.get_header("WARC-Target-URI"))
                   for h, _ in warcio_records(warc_file)]
    fast_view = []
    for record in FastIterator(str(warc_file), parse_http=False):
        headers = record.headers
        fast_view.append((headers.get("WARC-Type"), record.record_id, headers.get("WARC-Target-URI")))
        assert record.verify_block_digest(), headers.get("WARC-Type")
    assert fast_view == warcio_view
    http = [(r.headers.get("WARC-Type"), r.http_headers.status_line if r.http_headers else None)
            for r in FastIterator(str(warc_file), parse_http=True) if r.headers.get("WARC-Type") == "response"]
    assert http == [("response", "HTTP/1.1 200 OK"), ("response", "HTTP/1.1 200 OK")]
