"""One indexed WARC record read back whole, or refused as damaged: a reader seeks to the
record's gzip member (its offset and length in the capture index) and must get every byte of
it, and the record's block must be as long as its Content-Length and match its
WARC-Block-Digest where it has one. A file cut short, or bytes
changed on disk, would otherwise read as a shorter body with no word of warning (warcio stops
at whatever the gzip stream still yields)."""

from __future__ import annotations

import base64
import hashlib
import io
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator


class DamagedRecord(ValueError):
    """The record at (path, offset) cannot be read whole; `reason` says what is wrong with it."""

    def __init__(self, path: Path, offset: int, reason: str):
        super().__init__(f"{path} at offset {offset:,}: {reason}")
        self.path, self.offset, self.reason = path, offset, reason


def read_member(path: Path, offset: int, length: int) -> bytes:
    """The `length` bytes of the record's gzip member; DamagedRecord if the file ends sooner
    (FileNotFoundError is the caller's)."""
    with path.open("rb") as fh:  # a Path, or a UPath under a URL data root
        fh.seek(offset)
        member = fh.read(length)
    if len(member) < length:
        size = offset + len(member)
        raise DamagedRecord(path, offset, f"the file ends at byte {size:,}, inside the record (which ends at "
                                          f"byte {offset + length:,}): the file was cut short")
    return member


def check_member(path: Path, offset: int, member: bytes) -> str | None:
    """The record's WARC-Target-URI once its block is checked whole (length and digest);
    DamagedRecord when it is not a record, is shorter than it says, or fails its digest."""
    try:
        records = ArchiveIterator(io.BytesIO(member), no_record_parse=True)
        record = next(iter(records), None)
        if record is None:
            raise DamagedRecord(path, offset, "no WARC record starts there")
        block = record.raw_stream.read()
    except DamagedRecord:
        raise
    except Exception as exc:  # the bytes decide: zlib.error, warcio's ArchiveLoadFailed, a bad header
        raise DamagedRecord(path, offset, f"the record cannot be read ({type(exc).__name__}: {exc})") from None
    declared = int(record.rec_headers.get_header("Content-Length") or -1)
    if len(block) != declared:
        raise DamagedRecord(path, offset, f"its block holds {len(block):,} of the {declared:,} bytes its "
                                          "Content-Length says: the record was cut short")
    stated = record.rec_headers.get_header("WARC-Block-Digest")
    if stated and not digest_matches(stated, block):
        raise DamagedRecord(path, offset, f"its block does not match its WARC-Block-Digest {stated}: its bytes "
                                          "changed after it was written")
    return record.rec_headers.get_header("WARC-Target-URI")


def digest_matches(stated: str, block: bytes) -> bool:
    """A WARC digest ("sha1:<base32>", or hex) against the bytes; an algorithm hashlib does not
    know cannot be judged and passes."""
    algorithm, _, encoded = stated.partition(":")
    try:
        digest = hashlib.new(algorithm.lower().replace("-", ""), block).digest()
    except ValueError:
        return True
    return encoded.strip() in (base64.b32encode(digest).decode(), digest.hex(), digest.hex().upper())


def read_checked(path: Path, offset: int, length: int) -> bytes:
    """The record's gzip member, checked whole (read_member, then check_member)."""
    member = read_member(path, offset, length)
    check_member(path, offset, member)
    return member
