"""The WARC writer's own record serialiser (the fetch path's) against warcio's WARCWriter,
which it replaces for speed: the same bytes for every kind of record it writes, the record
ids aside (random). No network."""

import re
from datetime import datetime, timezone

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl_assets.crawler.archive.warc import (IDENTICAL_PAYLOAD, SERVER_NOT_MODIFIED, Exchange, Revisit, WarcFileWriter,
                                       payload_digest)

WHEN = datetime(2026, 12, 1, 1, 2, 3, 456789, tzinfo=timezone.utc)
IDS = re.compile(rb"<urn:uuid:[0-9a-f-]{36}>")


def exchange(url="http://a.test/p?x=1", status=200, reason="OK", headers=(("Content-Type", "text/html"),),
             body=b"hello body", truncated=False, version="HTTP/1.1"):
    return Exchange(url, "127.0.0.1", WHEN, "GET", url.split("a.test", 1)[1],
                    [("Host", "a.test"), ("User-Agent", "ua/1")], version, status, reason, list(headers), body, truncated)


CASES = {
    "response with its digest": (exchange(headers=(("Content-Type", "text/html"), ("Transfer-Encoding", "chunked"))),
                                 None, True),
    "response, digest computed": (exchange(), None, False),
    "truncated HTTP/1.0 without reason": (exchange(reason="", body=b"cut", truncated=True, version="HTTP/1.0"), None, False),
    "empty 404": (exchange(status=404, reason="Not Found", headers=(), body=b""), None, False),
    "identical payload revisit": (exchange(), Revisit(IDENTICAL_PAYLOAD, "http://a.test/o", "2026-11-30T00:00:00Z"), True),
    "identical payload revisit, digest computed": (exchange(), Revisit(IDENTICAL_PAYLOAD, None, None), False),
    # An earlier capture whose date is unknown: neither Refers-To field (half a capture named is none).
    "identical payload revisit, date unknown": (exchange(), Revisit(IDENTICAL_PAYLOAD, "http://a.test/o", None), True),
    "304 revisit, date known alone": (exchange(status=304, reason="Not Modified", body=b""),
                                      Revisit(SERVER_NOT_MODIFIED, None, "2026-11-30T00:00:00Z"), False),
    "304 revisit, original unknown": (exchange(status=304, reason="Not Modified", body=b""),
                                      Revisit(SERVER_NOT_MODIFIED, None, None), False),
    "304 revisit of a known capture": (exchange(status=304, reason="Not Modified", headers=(("ETag", '"e"'),), body=b""),
                                       Revisit(SERVER_NOT_MODIFIED, "http://a.test/p?x=1", "2026-11-30T00:00:00Z"), True),
}


@pytest.mark.parametrize("name", CASES)
def test_records_are_byte_for_byte_what_warcio_writes(tmp_path, name):
    ex, revisit, with_digest = CASES[name]
    digest = payload_digest(ex.body or b"earlier") if with_digest else None
    with WarcFileWriter(tmp_path, "t", "test") as writer:
        writer.write(ex)  # opens the file: the writers below share its warcio writer
        ours = writer._serialise(ex, revisit, digest)
        warcio_s = writer._serialise_with_warcio(ex, revisit, digest)
    assert [IDS.sub(b"<id>", r) for r in ours] == [IDS.sub(b"<id>", r) for r in warcio_s]
    response_id = re.search(rb"WARC-Record-ID: (<[^>]+>)", ours[0]).group(1)
    assert b"WARC-Concurrent-To: " + response_id + b"\r\n" in ours[1]
    # The request record's block is the request as the client writes it, HTTP version included.
    assert ours[1].endswith(b"\r\n\r\nGET " + ex.request_target.encode() + b" HTTP/1.1\r\nHost: a.test\r\n"
                            b"User-Agent: ua/1\r\n\r\n\r\n\r\n")


def test_a_header_that_is_not_ascii_is_left_to_warcio_which_percent_encodes_it(tmp_path):
    odd = exchange(headers=(("Content-Disposition", 'attachment; filename="café.txt"'),))
    with WarcFileWriter(tmp_path, "t", "test") as writer:
        writer.write(odd)
    with open(writer.closed_files[0], "rb") as fh:
        responses = [(r.http_headers.get_header("Content-Disposition"), r.content_stream().read())
                     for r in ArchiveIterator(fh) if r.rec_type == "response"]
    assert responses == [("attachment; filename*=UTF-8''caf%C3%A9.txt", b"hello body")]


def test_a_304_revisit_with_a_header_that_is_not_ascii_keeps_its_profile_and_the_earlier_payloads_digest(tmp_path):
    """warcio writes such a record (it %-encodes the header) as the fast path would have: a
    revisit, server-not-modified, naming the earlier capture and its payload's digest."""
    odd = exchange(status=304, reason="Not Modified", body=b"", headers=(("ETag", '"café"'),))
    earlier = payload_digest(b"the earlier body")
    with WarcFileWriter(tmp_path, "t", "test") as writer:
        writer.write(odd, Revisit(SERVER_NOT_MODIFIED, "http://a.test/p?x=1", "2026-11-30T00:00:00Z"), earlier)
    with open(writer.closed_files[0], "rb") as fh:
        (record,) = [r.rec_headers for r in ArchiveIterator(fh) if r.rec_type == "revisit"]
    assert (record.get_header("WARC-Profile"), record.get_header("WARC-Payload-Digest"),
            record.get_header("WARC-Refers-To-Date")) == (SERVER_NOT_MODIFIED, earlier, "2026-11-30T00:00:00Z")


def test_digests_and_record_ids_are_spelt_as_warcio_and_uuid_spell_them(tmp_path):
    import base64
    import hashlib
    import os
    import uuid

    for size in range(200):
        body = os.urandom(size)
        assert payload_digest(body) == "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")
    with WarcFileWriter(tmp_path, "t", "test") as writer:
        records = [writer._serialise(exchange(), None, None) for _ in range(300)]
    # The response's id, and the request's own (its first id is the response's).
    ids = [IDS.findall(record)[-1][10:-1].decode() for pair in records for record in pair]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_a_forked_child_names_its_records_with_ids_of_its_own(tmp_path):
    """Record IDs come from a pool of random bytes: a child forked after the parent drew
    from it must not draw the same bytes (two records of one crawl with one ID)."""
    import os

    def ids_written(folder) -> list[str]:
        with WarcFileWriter(folder, "t", "test") as writer:
            written = []
            for _ in range(4):
                writer.write(exchange())
                written.append(writer.last_record_id)
        return written

    ids_written(tmp_path / "before")  # the parent's pool is filled
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.write(write, " ".join(ids_written(tmp_path / "child")).encode())
        os._exit(0)
    os.waitpid(child, 0)
    os.close(write)
    theirs = set(os.read(read, 4096).decode().split())
    mine = set(ids_written(tmp_path / "parent"))
    assert len(theirs) == 4 and len(mine) == 4 and not theirs & mine


def test_threads_writing_records_at_once_never_share_a_record_id(tmp_path, monkeypatch):
    """Record IDs come from one pool of random bytes a process, and a Celery worker of the
    `threads` pool (deployment/cluster.py) runs fetch batches in threads of one process: each
    ID must be drawn whole. Here every look at the pool's size lets the other threads run (as a
    thread switch after any call may): a thread that saw room for one more ID and drew after
    another had taken it read past the pool's end, an ID of zeros, the same each time."""
    import os
    import threading
    import time
    import uuid

    class SlowBytes(bytes):
        def __len__(self):
            time.sleep(0.0002)  # the other threads run here
            return super().__len__()

    urandom = os.urandom
    monkeypatch.setattr(os, "urandom", lambda n: SlowBytes(urandom(n)))
    ids: list[str] = []

    def write(n: int) -> None:
        with WarcFileWriter(tmp_path / f"t{n}", "t", "test") as writer:
            for _ in range(400):
                writer.write(exchange())
                ids.append(writer.last_record_id)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(ids) == 1600 and len(set(ids)) == len(ids)
    assert all(uuid.UUID(text[10:-1]).int & ~((0xF000 << 64) | (0xC000 << 48)) for text in ids)  # random bits
