"""Which host shard a host belongs to, and how a shard is named: stable across processes,
machines and releases. The shard key format ("s03") is written and parsed here only."""

from __future__ import annotations

import hashlib
import re

_SHARD_KEY = re.compile(r"s(\d{2,})")


def shard_of(host: str, shard_count: int) -> int:
    # blake2b, not hash(): Python's str hash is salted per process.
    digest = hashlib.blake2b(host.lower().encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shard_count


def shard_key(index: int) -> str:
    """The partition key and folder name of shard `index`: s00, s01, ..."""
    assert index >= 0, index
    return f"s{index:02d}"


def shard_index(key: str) -> int:
    """The index of a shard key written by shard_key: "s03" -> 3."""
    match = _SHARD_KEY.fullmatch(key)
    if match is None:
        raise ValueError(f"not a shard key: {key!r} (expected s00, s01, ...)")
    return int(match.group(1))


def shard_keys(shard_count: int) -> list[str]:
    return [shard_key(i) for i in range(shard_count)]
