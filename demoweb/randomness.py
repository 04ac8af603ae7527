"""Deterministic randomness for the demo web: every choice is drawn from an RNG seeded by a
stable hash of what it is about, so two processes with the same parameters serve the same
bytes and nothing has to be stored."""

from __future__ import annotations

import functools
import hashlib
from random import Random

ZIPF_EXPONENT = 1.1


def stable_int(*parts: object) -> int:
    """A 64-bit integer from the parts' reprs; unlike hash() it is the same in every process."""
    data = "\x1f".join(repr(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def rng_for(*parts: object) -> Random:
    """A Random seeded by stable_int(*parts)."""
    return Random(stable_int(*parts))


def between(rng: Random, low: int, high: int) -> int:
    """rng.randint(low, high) at a fraction of the cost; rendering calls it a lot."""
    return low + int(rng.random() * (high - low + 1))


def pick(rng: Random, pool: tuple[str, ...]) -> str:
    """One element of `pool` with a single rng call."""
    return pool[int(rng.random() * len(pool))]


class Zipf:
    """Samples 0..n-1 with P(i) proportional to 1/(i+1)^s: low indices are very popular."""

    def __init__(self, n: int, exponent: float = ZIPF_EXPONENT):
        self.population = range(n)
        total = 0.0
        cum = []
        for i in range(n):
            total += 1.0 / (i + 1) ** exponent
            cum.append(total)
        self.cum_weights = cum

    def sample(self, rng: Random, k: int) -> list[int]:
        return rng.choices(self.population, cum_weights=self.cum_weights, k=k)

    def distinct(self, rng: Random, want: int, exclude: set[int]) -> list[int]:
        """Up to `want` distinct indices not in `exclude`, in draw order."""
        n = len(self.population)
        want = min(want, n - sum(1 for e in exclude if 0 <= e < n))
        chosen: list[int] = []
        seen = set(exclude)
        for _ in range(8):  # bounded: the heavy head makes later draws mostly repeats
            if len(chosen) >= want:
                break
            for idx in self.sample(rng, want * 3):
                if idx not in seen:
                    seen.add(idx)
                    chosen.append(idx)
                    if len(chosen) >= want:
                        break
        return chosen


@functools.lru_cache(maxsize=8)
def zipf(n: int) -> Zipf:
    """A shared Zipf sampler over 0..n-1."""
    return Zipf(n)
