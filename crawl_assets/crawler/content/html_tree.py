"""One parse of an HTML body (resiliparse's lexbor DOM), shared by the link scan (links.py)
and the main text (simhash.page_text): a page is decoded and parsed once, not once for each."""

from __future__ import annotations

from resiliparse.parse.encoding import bytes_to_str, detect_encoding
from resiliparse.parse.html import HTMLTree

__all__ = ["HTMLTree", "decoded_html", "parse_html"]


def decoded_html(raw: bytes) -> str:
    """The body as text: UTF-8 when it is valid UTF-8, else in the encoding the detector names.
    Valid UTF-8 is almost never anything else, and the detector misreads short UTF-8 texts
    (one in 35 random ones as cp1252), and it costs CPU on every page. ISO-2022 texts are 7-bit,
    so valid UTF-8 too: their escape byte sends them to the detector."""
    if b"\x1b" not in raw:
        try:
            return raw.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError:
            pass
    return bytes_to_str(raw, detect_encoding(raw))


def parse_html(html: bytes | str | HTMLTree) -> HTMLTree:
    """The document tree of an HTML body (bytes are decoded first); a tree is passed through."""
    if isinstance(html, HTMLTree):
        return html
    if isinstance(html, (bytes, bytearray, memoryview)):
        html = decoded_html(bytes(html))
    return HTMLTree.parse(html)
