import gzip
import zlib

import brotli
import pytest
import zstandard

from crawl_assets.crawler.content.decoding import DecodingError, decode_body

TEXT = b"<p>hello</p>" * 1000


@pytest.mark.parametrize("encoding, encoded", [
    ("gzip", gzip.compress(TEXT)),
    ("deflate", zlib.compress(TEXT)),
    ("br", brotli.compress(TEXT)),
    ("zstd", zstandard.ZstdCompressor().compress(TEXT)),
    ("zstd", zstandard.ZstdCompressor().compress(TEXT[:5000]) + zstandard.ZstdCompressor().compress(TEXT[5000:])),
    ("gzip, zstd", zstandard.ZstdCompressor().compress(gzip.compress(TEXT))),
    (None, TEXT),
    ("identity", TEXT),
], ids=["gzip", "deflate", "br", "zstd", "zstd-two-frames", "gzip-then-zstd", "none", "identity"])  # ids: gzip's header holds the time (xdist compares ids)
def test_bodies_are_decoded(encoding, encoded):
    assert decode_body(encoded, encoding, limit=1 << 20) == (TEXT, False)


def test_decompression_stops_at_the_limit():
    bomb = gzip.compress(b"\0" * (50 << 20))  # 50 MiB of zeros in about 50 KB
    content, too_long = decode_body(bomb, "gzip", limit=1 << 20)
    assert len(content) == 1 << 20 and too_long
    content, too_long = decode_body(brotli.compress(b"\0" * (50 << 20)), "br", limit=1 << 20)
    assert len(content) == 1 << 20 and too_long
    # A frame that does not say its size, so only the cap can stop it.
    zstd_bomb = zstandard.ZstdCompressor(write_content_size=False).compress(b"\0" * (50 << 20))
    assert len(zstd_bomb) < 10_000
    content, too_long = decode_body(zstd_bomb, "zstd", limit=1 << 20)
    assert len(content) == 1 << 20 and too_long


def test_a_zstd_frame_asking_for_a_window_above_rfc_9659s_8_mib_is_refused():
    # 128 MiB; streamed without a content size, so the frame keeps the window it asks for.
    params = zstandard.ZstdCompressionParameters(window_log=27, write_content_size=False)
    stream = zstandard.ZstdCompressor(compression_params=params).compressobj()
    huge_window = stream.compress(bytes(range(256)) * (40 << 12)) + stream.flush()
    assert zstandard.get_frame_parameters(huge_window).window_size == 128 << 20
    with pytest.raises(DecodingError, match="zstd"):
        decode_body(huge_window, "zstd", limit=50 << 20)


def test_garbage_is_a_decoding_error():
    with pytest.raises(DecodingError):
        decode_body(b"not gzip at all", "gzip", limit=1000)
    with pytest.raises(DecodingError, match="zstd"):
        decode_body(b"not zstd at all", "zstd", limit=1000)
    with pytest.raises(DecodingError, match="unsupported"):
        decode_body(b"x", "compress", limit=1000)
