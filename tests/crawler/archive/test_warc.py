import random
import zlib
from datetime import datetime, timezone

from warcio.archiveiterator import ArchiveIterator

from crawl_assets.crawler.archive.warc import Exchange, WarcFileWriter
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

    # Each location is exactly the gzip member holding that response: warcio's own offsets and
    # lengths (what a CDXJ indexer records) agree, the bytes at [offset, offset + length)
    # decompress to one whole record, and reading from the offset yields that response.
    with open(files[0], "rb") as fh:
        it = ArchiveIterator(fh)
        members = [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI"),
                    it.get_record_offset(), it.get_record_length()) for r in it]
    url = "http://h0001.demo.test:8471/p/{}.html".format
    assert [(t, u, o, n) for t, u, o, n in members if t == "response"] == [
        ("response", url(n), loc.offset, loc.length) for n, loc in enumerate(locations)]
    data = files[0].read_bytes()
    # The members tile the file: each starts where the one before ends (its request follows it).
    assert [o for _, _, o, _ in members] == [0] + [o + n for _, _, o, n in members[:-1]]
    assert members[-1][2] + members[-1][3] == len(data)
    for n, loc in enumerate(locations):
        assert loc.filename == "t-00000.warc.gz" and loc.length > 0
        member = zlib.decompressobj(zlib.MAX_WBITS | 16)
        raw = member.decompress(data[loc.offset:loc.offset + loc.length])
        assert member.eof and not member.unused_data  # one whole member, nothing more
        assert raw.startswith(b"WARC/1.1\r\n") and raw.endswith(b"\r\n\r\n")
        assert b"WARC-Type: response\r\n" in raw and f"WARC-Target-URI: {url(n)}\r\n".encode() in raw
        with open(files[0], "rb") as fh:
            fh.seek(loc.offset)
            record = next(iter(ArchiveIterator(fh)))
            assert record.rec_type == "response"
            assert record.rec_headers.get_header("WARC-Target-URI") == url(n)
            assert record.content_stream().read() == b"<html>hello</html>"


def named_fields(member: bytes) -> list[tuple[str, str]]:
    """The named fields of a gzip member's one record, as written (name case kept)."""
    head = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(member).split(b"\r\n\r\n", 1)[0]
    return [tuple(line.decode().split(": ", 1)) for line in head.split(b"\r\n")[1:]]


def test_request_and_conversion_records_spell_their_fields_as_warc_1_1_names_them(tmp_path):
    """Their fields written as the standard spells them, in warcio's order (what the response
    record's are, being warcio's byte for byte: test_warc_records.py); a conversion is HTML by
    default, and its location is its own gzip member, read back as the conversion."""
    with WarcFileWriter(tmp_path / "deep" / "er", "t", "recrawl-test", info={"operator": "tests"}) as writer:
        page = writer.write(exchange(0))
        response_id = writer.last_record_id
        dom = writer.write_conversion(exchange(0).url, response_id, "2026-11-29T12:00:00.000000Z", b"<html>dom</html>")
    data = writer.closed_files[0].read_bytes()
    request = named_fields(data[page.offset + page.length:dom.offset])
    assert [name for name, _ in request] == [
        "WARC-Date", "WARC-IP-Address", "WARC-Warcinfo-ID", "WARC-Concurrent-To", "WARC-Type", "WARC-Record-ID",
        "WARC-Target-URI", "WARC-Payload-Digest", "WARC-Block-Digest", "Content-Type", "Content-Length"]
    conversion = named_fields(data[dom.offset:dom.offset + dom.length])
    assert [name for name, _ in conversion] == [
        "WARC-Date", "WARC-Type", "WARC-Record-ID", "WARC-Warcinfo-ID", "WARC-Target-URI", "WARC-Refers-To",
        "WARC-Payload-Digest", "WARC-Block-Digest", "Content-Type", "Content-Length"]
    assert dict(conversion)["Content-Type"] == "text/html; charset=utf-8"
    assert dict(conversion)["WARC-Refers-To"] == response_id and dom.filename == "t-00000.warc.gz"
    assert dom.offset + dom.length == len(data)  # the file's last member, whole
    with open(writer.closed_files[0], "rb") as fh:
        fh.seek(dom.offset)
        record = next(iter(ArchiveIterator(fh)))
        assert (record.rec_type, record.content_stream().read()) == ("conversion", b"<html>dom</html>")
    # The warcinfo record says what wrote the file, in which format, and the info it was given.
    with open(writer.closed_files[0], "rb") as fh:
        info = next(iter(ArchiveIterator(fh))).content_stream().read().decode()
    assert info.splitlines() == ["software: recrawl-test", "format: WARC File Format 1.1", "operator: tests"]


def test_warc_dates_are_utc_to_the_microsecond_whatever_the_machines_time_zone(monkeypatch):
    import time

    from crawl_assets.crawler.archive.warc import warc_date

    moment = datetime(2026, 12, 1, 1, 2, 3, 456789, tzinfo=timezone.utc)
    try:
        for zone in ("UTC", "Asia/Kathmandu", "America/St_Johns"):
            monkeypatch.setenv("TZ", zone)
            time.tzset()
            assert warc_date(moment) == "2026-12-01T01:02:03.456789Z"
    finally:
        monkeypatch.undo()
        time.tzset()


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


def test_sync_gives_every_files_length_on_disk_and_adopted_files_count_as_the_writers(tmp_path):
    """A checkpoint's lengths (crawler/batches/progress.py): each closed file's size, and the
    open file's bytes written so far, on disk at that length (the resume cuts it back to it).
    Files of an earlier attempt adopted on a resume count as this writer's."""
    earlier = tmp_path / "first-00000.warc.gz"  # (a resumed attempt writes under a prefix of its own)
    earlier.write_bytes(b"x" * 123)
    with WarcFileWriter(tmp_path, "t", "recrawl-test", max_file_bytes=2000) as writer:
        writer.adopt([earlier])
        writer.write(exchange(0, body=random.Random(0).randbytes(3000)))  # rolls over: t-00000 closed
        writer.write(exchange(1))
        lengths = writer.sync()
        opened = tmp_path / "t-00001.warc.gz.open"
        assert lengths == {"first-00000.warc.gz": 123, "t-00000.warc.gz": (tmp_path / "t-00000.warc.gz").stat().st_size,
                           "t-00001.warc.gz": opened.stat().st_size}
        assert lengths["t-00001.warc.gz"] > 0
    assert writer.closed_files == [earlier, tmp_path / "t-00000.warc.gz", tmp_path / "t-00001.warc.gz"]
    assert writer.sync() == lengths  # closed: the same lengths, no file open


def test_an_abandoned_writer_leaves_its_open_file_under_its_open_name(tmp_path):
    """A stopped batch (a full disk, a kill) abandons its writer: the open file keeps its
    ".open" name, for the resume to cut back; closing it afterwards renames nothing."""
    writer = WarcFileWriter(tmp_path, "t", "recrawl-test")
    writer.write(exchange(0))
    writer.abandon()
    writer.abandon()  # twice: nothing more
    assert writer.close() == []
    assert [p.name for p in tmp_path.iterdir()] == ["t-00000.warc.gz.open"]


def test_a_full_disk_stops_the_batch_with_a_sentence_naming_the_folder(tmp_path):
    """The open file on a full disk (/dev/full refuses every write with ENOSPC): a record that
    does not fit, or the checkpoint's flush, stops the batch (BatchStopped) with what to do."""
    import pytest

    from crawl_assets.crawler.crawl_errors import BatchStopped

    (tmp_path / "t-00000.warc.gz.open").symlink_to("/dev/full")
    writer = WarcFileWriter(tmp_path, "t", "recrawl-test")
    writer.write(exchange(0))  # small: still in the file's buffer
    with pytest.raises(BatchStopped) as stopped:
        writer.sync()
    assert str(stopped.value) == (f"the disk holding {tmp_path} is full (No space left on device): the fetch batch "
                                  "stopped at its last checkpoint; free some space and run it again to resume")
    with pytest.raises(BatchStopped, match=f"^the disk holding {tmp_path} is full"):
        writer.write(exchange(1, body=random.Random(1).randbytes(20_000)))  # past the buffer: written at once
    writer.abandon()
