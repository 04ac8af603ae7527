import gzip
import zlib

import brotli
import pytest

from crawl_assets.crawler.content.decoding import DecodingError, decode_body

TEXT = b"<p>hello</p>" * 1000


@pytest.mark.parametrize("encoding, encoded", [
    ("gzip", gzip.compress(TEXT)),
    ("deflate", zlib.compress(TEXT)),
    ("br", brotli.compress(TEXT)),
    (None, TEXT),
    ("identity", TEXT),
], ids=["gzip", "deflate", "br", "none", "identity"])  # ids: gzip's header holds the time (xdist compares ids)
def test_bodies_are_decoded(encoding, encoded):
    assert decode_body(encoded, encoding, limit=1 << 20) == (TEXT, False)


def test_decompression_stops_at_the_limit():
    bomb = gzip.compress(b"\0" * (50 << 20))  # 50 MiB of zeros in about 50 KB
    content, too_long = decode_body(bomb, "gzip", limit=1 << 20)
    assert len(content) == 1 << 20 and too_long
    content, too_long = decode_body(brotli.compress(b"\0" * (50 << 20)), "br", limit=1 << 20)
    assert len(content) == 1 << 20 and too_long


def test_garbage_is_a_decoding_error():
    with pytest.raises(DecodingError):
        decode_body(b"not gzip at all", "gzip", limit=1000)
    with pytest.raises(DecodingError, match="unsupported"):
        decode_body(b"x", "compress", limit=1000)
