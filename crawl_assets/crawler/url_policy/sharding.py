"""Which host shard a host belongs to, and how a shard is named: stable across processes,
machines and releases. The shard key format ("s03") is written and parsed here only.

Pre-sharding: a host hashes to one of VIRTUAL_SHARDS fixed virtual shards, and a table maps
the virtual shards to the configured shard count. The table for N + 1 shards is the table
for N with the new shard taking V // (N + 1) virtual shards from the fullest shards, so
going from N to N + 1 shards moves 1 / (N + 1) of the hosts (not nearly all of them, as
`hash % N` does) and every shard holds V // N or V // N + 1 virtual shards. A host's URLs
therefore stay in one shard across a change of shard_count; the hosts that move are whole.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

_SHARD_KEY = re.compile(r"s(\d{2,})")

# Fixed forever: changing it re-shards every host. It is also the largest shard count.
VIRTUAL_SHARDS = 1024


def virtual_shard(host: str) -> int:
    # blake2b, not hash(): Python's str hash is salted per process.
    digest = hashlib.blake2b(host.lower().encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % VIRTUAL_SHARDS


def shard_of(host: str, shard_count: int) -> int:
    return shard_table(shard_count)[virtual_shard(host)]


def check_shard_count(shard_count: int) -> None:
    if not 1 <= shard_count <= VIRTUAL_SHARDS:
        raise ValueError(f"shard_count must be between 1 and {VIRTUAL_SHARDS} "
                         f"(the virtual shards hosts map to), not {shard_count}")


@lru_cache(maxsize=16)
def shard_table(shard_count: int) -> tuple[int, ...]:
    """The shard of each virtual shard, for `shard_count` shards (index = virtual shard)."""
    check_shard_count(shard_count)
    owned: list[list[int]] = [list(range(VIRTUAL_SHARDS))]  # shard -> its virtual shards, ascending
    for new in range(1, shard_count):
        taken = []
        for _ in range(VIRTUAL_SHARDS // (new + 1)):
            # The fullest shard (the lowest index among equals) gives up its highest virtual shard.
            donor = max(range(new), key=lambda s: (len(owned[s]), -s))
            taken.append(owned[donor].pop())
        owned.append(sorted(taken))
    table = [0] * VIRTUAL_SHARDS
    for shard, virtuals in enumerate(owned):
        for v in virtuals:
            table[v] = shard
    return tuple(table)


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
