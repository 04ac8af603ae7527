"""Confirming SimHash candidates with MinHash Jaccard similarity (datasketch), on the page
texts read back from the WARC files, for when a near-duplicate decision must be sure."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from warcio.archiveiterator import ArchiveIterator

from .decoding import decode_body
from .simhash import page_text

if TYPE_CHECKING:  # datasketch's package import pulls in scipy: every run would pay it at its start
    from datasketch import MinHash

NUM_PERM = 128


def text_from_warc(path: Path, offset: int) -> str:
    """Main text of the response record at `offset` (one gzip member) of a WARC file."""
    with path.open("rb") as fh:  # a Path, or a UPath under a URL data root
        fh.seek(offset)
        record = next(iter(ArchiveIterator(fh)))
        # raw_stream: the payload as archived. content_stream() would undo the Content-Encoding
        # itself, and decoding twice fails; decode_body also caps what a bomb can grow to.
        body = record.raw_stream.read()
        encoding = record.http_headers.get_header("Content-Encoding") if record.http_headers else None
    content, _ = decode_body(body, encoding, 50 << 20)
    return page_text(content)


def minhash_of(text: str, shingle: int = 3) -> MinHash:
    words = text.lower().split()
    from datasketch import MinHash  # noqa: PLC0415 (imported where first needed)

    sketch = MinHash(num_perm=NUM_PERM)
    sketch.update_batch(" ".join(words[i:i + shingle]).encode() for i in range(max(len(words) - shingle + 1, 1)))
    return sketch


def jaccard(text_a: str, text_b: str) -> float:
    return minhash_of(text_a).jaccard(minhash_of(text_b))
