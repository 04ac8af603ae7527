"""Which host shard a host belongs to: stable across processes, machines and releases."""

from __future__ import annotations

import hashlib


def shard_of(host: str, shard_count: int) -> int:
    # blake2b, not hash(): Python's str hash is salted per process.
    digest = hashlib.blake2b(host.lower().encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shard_count
