import random
from datetime import datetime, timezone

from warcio.archiveiterator import ArchiveIterator

from crawl_assets.crawler.warc import Exchange, WarcFileWriter
from support import assert_warcio_check_passes


def exchange(n: int, body: bytes = b"<html>hello</html>", **kw) -> Exchange:
    return Exchange(
        url=f"http://h0001.demo.test:8471/p/{n}.html", ip="127.0.0.1",
        fetched_at=datetime(2026, 11, 29, 12, 0, n, tzinfo=timezone.utc), method="GET",
        request_target=f"/p/{n}.html",
        request_headers=[("Host", "h0001.demo.test:8471"), ("User-Agent", "recrawl-test")],
        http_version="HTTP/1.1", status=200, reason="OK",
        response_headers=[("Content-Type", "text/html"), ("Content-Length", str(len(body)))],
        body=body, **kw)


def test_warc_files_hold_warcinfo_then_response_request_pairs(tmp_path):
    with WarcFileWriter(tmp_path, "t", "recrawl-test") as writer:
        locations = [writer.write(exchange(n)) for n in range(3)]
        assert list(tmp_path.iterdir()) == [tmp_path / "t-00000.warc.gz.open"]  # not final yet
    files = writer.closed_files
    assert files == [tmp_path / "t-00000.warc.gz"] and files[0].exists()

    assert_warcio_check_passes(files[0])

    with open(files[0], "rb") as fh:
        records = list((r.rec_type, r.rec_headers, r.content_stream().read()) for r in ArchiveIterator(fh))
    assert [t for t, _, _ in records] == ["warcinfo"] + ["response", "request"] * 3
    assert records[0][1].get_header("WARC-Filename") == "t-00000.warc.gz"
    response, request = records[1][1], records[2][1]
    assert response.protocol == "WARC/1.1"
    assert response.get_header("WARC-IP-Address") == "127.0.0.1"
    assert response.get_header("WARC-Target-URI") == "http://h0001.demo.test:8471/p/0.html"
    assert response.get_header("WARC-Payload-Digest").startswith("sha1:")
    assert request.get_header("WARC-Concurrent-To") == response.get_header("WARC-Record-ID")
    assert records[1][2] == b"<html>hello</html>"

    # Each location points at exactly one gzip member holding that response.
    with open(files[0], "rb") as fh:
        for n, loc in enumerate(locations):
            fh.seek(loc.offset)
            record = next(iter(ArchiveIterator(fh)))
            assert record.rec_headers.get_header("WARC-Target-URI").endswith(f"/p/{n}.html")
            assert fh.tell() >= loc.offset + loc.length


def test_files_roll_over_at_the_size_limit(tmp_path):
    with WarcFileWriter(tmp_path, "t", "recrawl-test", max_file_bytes=2000) as writer:
        for n in range(4):
            writer.write(exchange(n, body=random.Random(n).randbytes(3000)))  # incompressible
    assert [p.name for p in writer.closed_files] == [f"t-0000{i}.warc.gz" for i in range(4)]
    assert not list(tmp_path.glob("*.open"))


def test_truncated_bodies_are_marked(tmp_path):
    with WarcFileWriter(tmp_path, "t", "recrawl-test") as writer:
        writer.write(exchange(1, truncated=True))
    with open(writer.closed_files[0], "rb") as fh:
        response = [r for r in ArchiveIterator(fh) if r.rec_type == "response"][0]
    assert response.rec_headers.get_header("WARC-Truncated") == "length"
