"""A record read back by its offset and length is whole or refused as damaged: a file cut short
inside it, a member whose block is shorter than its Content-Length, bytes changed after it was
written (its WARC-Block-Digest), bytes that are no gzip any more. No network."""

import gzip
import io
import os

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawl_assets.crawler.archive.warc_reading import DamagedRecord, check_member, read_checked, read_member

URL = "http://a.test/page"


def one_record(body: bytes) -> bytes:
    """One response record as one gzip member (warcio writes its block digest)."""
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=True)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
    writer.write_record(writer.create_warc_record(URL, "response", payload=io.BytesIO(body), http_headers=http))
    return out.getvalue()


@pytest.fixture
def warc(tmp_path):
    """A file of two records (random bodies, which gzip cannot hide): (path, [(offset, length)])."""
    first, second = one_record(os.urandom(3000).hex().encode()), one_record(os.urandom(3000).hex().encode())
    path = tmp_path / "a.warc.gz"
    path.write_bytes(first + second)
    return path, [(0, len(first)), (len(first), len(second))]


def test_a_whole_record_reads_with_its_uri(warc):
    path, records = warc
    for offset, length in records:
        assert check_member(path, offset, read_member(path, offset, length)) == URL


def test_a_file_cut_inside_a_record_is_refused_by_its_length(warc):
    path, ((_, _), (offset, length)) = warc
    path.write_bytes(path.read_bytes()[:-1000])  # as in the issue: the last 1,000 bytes cut off
    with pytest.raises(DamagedRecord, match=f"the file ends at byte {offset + length - 1000:,}, inside the record "
                                            f"\\(which ends at byte {offset + length:,}\\): the file was cut short"):
        read_member(path, offset, length)


def test_a_member_whose_block_is_short_is_refused_even_when_read_whole(warc):
    """warcio reads what the gzip stream still yields: a shorter body, without a word."""
    path, ((offset, length), _) = warc
    member = read_member(path, offset, length)[:-1000]
    with pytest.raises(DamagedRecord, match="its block holds [0-9,]+ of the [0-9,]+ bytes its Content-Length says"):
        check_member(path, offset, member)


def test_changed_bytes_fail_the_block_digest(warc):
    path, ((offset, length), _) = warc
    text = gzip.decompress(read_member(path, offset, length))
    changed = gzip.compress(text[:-10] + bytes(b ^ 1 for b in text[-10:]))  # the body's last bytes, same length
    with pytest.raises(DamagedRecord, match="its block does not match its WARC-Block-Digest sha1:"):
        check_member(path, offset, changed)
    flipped = bytearray(read_member(path, offset, length))
    flipped[len(flipped) // 2] ^= 0xFF  # a bit rot in the compressed bytes
    with pytest.raises(DamagedRecord):
        check_member(path, offset, bytes(flipped))
    assert read_checked(path, *warc[1][1]) == path.read_bytes()[warc[1][1][0]:]  # the other record is whole
