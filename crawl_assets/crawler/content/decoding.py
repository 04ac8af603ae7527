"""Undo Content-Encoding (gzip, deflate, br, zstd) for parsing; the WARC keeps the bytes as sent.
Every coding stops at the caller's limit: a compression bomb never grows past it."""

from __future__ import annotations

import io
import zlib

import zstandard

try:
    import brotli
except ImportError:  # brotli is optional: without it br bodies are archived, not parsed
    brotli = None

# RFC 9659: a zstd content coding needs no window above 8 MiB; a frame asking for more is
# refused rather than given the memory.
ZSTD_MAX_WINDOW = 8 << 20
_ZSTD = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)

_DECOMPRESS_ERRORS = (zlib.error, zstandard.ZstdError) + ((brotli.error,) if brotli else ())


class DecodingError(ValueError):
    pass


def _inflate(data: bytes, wbits: int, limit: int) -> bytes:
    return zlib.decompressobj(wbits).decompress(data, limit + 1)


def _unzstd(data: bytes, limit: int) -> bytes:
    """zstd frames (one or several, RFC 9659) decoded up to limit + 1 bytes."""
    reader = _ZSTD.stream_reader(io.BytesIO(data), read_across_frames=True)
    parts, size = [], 0
    while size <= limit and (part := reader.read(limit + 1 - size)):
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def _decode_one(coding: str, data: bytes, limit: int) -> bytes:
    if coding in ("gzip", "x-gzip"):
        return _inflate(data, zlib.MAX_WBITS | 32, limit)
    if coding == "deflate":  # zlib-wrapped as the RFC says, or raw deflate as many servers send
        try:
            return _inflate(data, zlib.MAX_WBITS, limit)
        except zlib.error:
            return _inflate(data, -zlib.MAX_WBITS, limit)
    if coding == "br" and brotli is not None:
        return brotli.Decompressor().process(data, output_buffer_limit=limit + 1)
    if coding == "zstd":
        return _unzstd(data, limit)
    raise DecodingError(f"unsupported content-encoding {coding!r}")


def decode_body(body: bytes, content_encoding: str | None, limit: int) -> tuple[bytes, bool]:
    """(decoded body cut at `limit` bytes, whether it was longer): a compression bomb stops
    growing at the limit instead of filling memory."""
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    for coding in reversed(codings):
        if coding == "identity":
            continue
        try:
            body = _decode_one(coding, body, limit)
        except _DECOMPRESS_ERRORS as exc:
            raise DecodingError(f"cannot decode {coding} body: {exc}") from exc
    return body[:limit], len(body) > limit
