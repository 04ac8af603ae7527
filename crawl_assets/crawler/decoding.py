"""Undo Content-Encoding (gzip, deflate, br) for parsing; the WARC keeps the bytes as sent."""

from __future__ import annotations

import zlib

try:
    import brotli
except ImportError:  # brotli is optional: without it br bodies are archived, not parsed
    brotli = None


class DecodingError(ValueError):
    pass


def decode_body(body: bytes, content_encoding: str | None, limit: int) -> bytes:
    """The decoded body, cut off at `limit` bytes so a compression bomb cannot grow past it."""
    for coding in reversed([c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]):
        if coding in ("identity", ""):
            continue
        try:
            if coding in ("gzip", "x-gzip", "deflate"):
                wbits = zlib.MAX_WBITS | 32 if coding != "deflate" else zlib.MAX_WBITS
                try:
                    body = zlib.decompressobj(wbits).decompress(body, limit)
                except zlib.error:
                    if coding != "deflate":
                        raise
                    body = zlib.decompressobj(-zlib.MAX_WBITS).decompress(body, limit)
            elif coding == "br" and brotli is not None:
                body = brotli.Decompressor().process(body, output_buffer_limit=limit)
            else:
                raise DecodingError(f"unsupported content-encoding {coding!r}")
        except (zlib.error, brotli.error if brotli else zlib.error) as exc:
            raise DecodingError(f"cannot decode {coding} body: {exc}") from exc
    return body[:limit]
