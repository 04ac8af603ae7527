"""The "seen this URL?" filter: an rbloom Bloom filter over canonical URLs.

The hash is explicit (xxh3-128) because rbloom refuses to save a filter built on Python's
salted hash(), and a filter must mean the same thing in every process that loads it. A
Bloom filter cannot forget, so it is rebuilt from the authoritative URL registry each day.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable
from pathlib import Path

import xxhash
from rbloom import Bloom

from ..crawl_errors import CrawlInputError
from .sharding import shard_of

DEFAULT_FP_RATE = 0.001
DIGEST_SUFFIX = ".sha256"
_I128_OFFSET = 1 << 127  # rbloom wants a signed 128-bit integer
# rbloom rounds the number of hash functions down, which lands its measured rate above the
# one asked for (bench/README.md); asking for 10% less keeps the stated rate honest for a
# little more memory.
_RBLOOM_MARGIN = 0.9
# A filter of a few hundred URLs has a few thousand bits, and its rate swings with which ones
# collide (above the rate asked for: bench/README.md): small filters are sized for this
# many URLs (about 18 KB), which keeps them well under the stated rate for nothing.
MIN_SIZED_ITEMS = 10_000


def url_hash(url: str) -> int:
    return xxhash.xxh3_128_intdigest(url.encode("utf-8")) - _I128_OFFSET


def build_filter(urls: Iterable[str], expected_items: int, fp_rate: float = DEFAULT_FP_RATE) -> Bloom:
    bloom = Bloom(max(expected_items, MIN_SIZED_ITEMS), fp_rate * _RBLOOM_MARGIN, url_hash)
    bloom.update(urls)
    return bloom


def digest_file(path: Path) -> Path:
    """Beside each filter, the SHA-256 of its bytes: rbloom takes the filter's size from the
    file's length, so a truncated filter would load silently and answer wrongly."""
    return path.with_name(path.name + DIGEST_SUFFIX)


def save_filter(bloom: Bloom, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    bloom.save(str(tmp))
    digest_file(path).write_text(hashlib.sha256(tmp.read_bytes()).hexdigest() + "\n")
    tmp.replace(path)


def load_filter(path: Path) -> Bloom:
    """The filter saved at path; CrawlInputError when the file is truncated or corrupt."""
    path = Path(path)
    folder = path.parent.parent if path.parent.name.startswith("shard=") else path.parent  # (one shard's filter)
    day = folder.name.removeprefix("date=")
    redo = (f"run the cycle command again, which rebuilds it from the URL registry of {day} first (or "
            f"materialise seen_url_filter for {day} in the UI)")
    digest = digest_file(path)
    if digest.exists() and hashlib.sha256(path.read_bytes()).hexdigest() != digest.read_text().strip():
        raise CrawlInputError(f"the seen-URL filter {path} does not match its checksum "
                              f"({digest.name}): it is truncated or corrupt; {redo}")
    try:
        return Bloom.load(str(path), url_hash)
    except (OSError, ValueError) as exc:
        raise CrawlInputError(f"the seen-URL filter {path} cannot be read ({exc}): {redo}") from None


class ShardSeenFilter:
    """A seen filter of one shard's hosts' URLs: it answers for a URL of those hosts only (a
    fetch process then holds 1/shard_count of the crawl's filter). holds(host): is the host
    one of the shard's? (shard_of, asked once per host)."""

    def __init__(self, bloom: Bloom, shard_index: int, shard_count: int):
        self.bloom = bloom
        self.shard_index, self.shard_count = shard_index, shard_count
        self._holds: dict[str, bool] = {}

    def holds(self, host: str) -> bool:
        held = self._holds.get(host)
        if held is None:
            held = self._holds[host] = shard_of(host, self.shard_count) == self.shard_index
        return held


FP_SAMPLE_SIZE = 100_000  # held-out URLs the false-positive rate is measured on


def measured_fp_rate(bloom: Bloom, sample_size: int = FP_SAMPLE_SIZE, seed: int = 0) -> float:
    """False-positive rate on URLs that were never added (a held-out, made-up sample)."""
    rng = random.Random(seed)
    held_out = (f"http://held-out-{rng.getrandbits(64):016x}.invalid/{n}" for n in range(sample_size))
    return sum(url in bloom for url in held_out) / sample_size
